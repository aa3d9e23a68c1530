"""The rule registry: every rule evalcase knows, by code. One module per rule."""

from __future__ import annotations

from evalcase.lint.base import Rule
from evalcase.lint.rules import (
    bad_number,
    duplicate_key,
    encoding,
    file_too_large,
    invalid_suppression,
    key_type,
    merge_key,
    not_a_mapping,
    path_escape,
    resource_limit,
    schema_invalid_value,
    schema_not_allowed,
    schema_required,
    schema_unknown_field,
    schema_wrong_type,
    symlink,
    text_hygiene,
    unexpected_file,
    unsafe_tag,
    unused_suppression,
    wrong_kind,
    yaml_syntax,
)

_MODULES = (
    # files and YAML (EC0xx)
    yaml_syntax,
    duplicate_key,
    unsafe_tag,
    encoding,
    file_too_large,
    resource_limit,
    not_a_mapping,
    key_type,
    bad_number,
    merge_key,
    text_hygiene,
    symlink,
    unexpected_file,
    wrong_kind,
    path_escape,
    # the contract (EC1xx)
    schema_required,
    schema_unknown_field,
    schema_wrong_type,
    schema_not_allowed,
    schema_invalid_value,
    # identity (EC2xx)
    # references (EC3xx)
    # governance (EC4xx)
    # versioning (EC5xx)
    # suppressions (EC9xx)
    unused_suppression,
    invalid_suppression,
)

RULES: dict[str, Rule] = {m.CODE: Rule.from_module(m) for m in _MODULES}
