"""Export and publish: Parquet shards, dataset cards, Hub push (shared by the PALM and MSU builders).

Typical use::

    files = export_dataset_dict({"en": dataset_dict_en, "zh": dataset_dict_zh}, out_dir)
    yaml_text = front_matter(files, default_config="en", license="cc-by-4.0")
    write_card(out_dir, render_card("palm.md.j2", {"configs_yaml": yaml_text, ...}, templates=hub_cards_dir()))
    check_card(out_dir)
    push_folder(out_dir, "org/name", dry_run=True)
"""

import importlib

# Names resolve on first use (PEP 562), so importing a light submodule such as
# ``lalm_eval.hub.readers`` (corpus readers, ``corpus-info``) does not load datasets,
# huggingface_hub and Jinja2 through this package.
_WHERE = {
    **dict.fromkeys(
        [
            "CARD_NAME",
            "CardError",
            "check_card",
            "configs_yaml_block",
            "feature_rows",
            "front_matter",
            "render_card",
            "validate_card",
            "write_card",
        ],
        "card",
    ),
    **dict.fromkeys(["export_dataset_dict", "file_sha256", "write_split"], "parquet"),
    **dict.fromkeys(["PushReport", "push_folder", "upload_files"], "push"),
}


def __getattr__(name: str):
    if name in _WHERE:
        value = getattr(importlib.import_module(f"lalm_eval.hub.{_WHERE[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'lalm_eval.hub' has no attribute {name!r}")


__all__ = [
    "CARD_NAME",
    "CardError",
    "PushReport",
    "check_card",
    "configs_yaml_block",
    "export_dataset_dict",
    "feature_rows",
    "file_sha256",
    "front_matter",
    "push_folder",
    "render_card",
    "upload_files",
    "validate_card",
    "write_card",
    "write_split",
]
