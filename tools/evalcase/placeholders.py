"""The ``TODO:`` placeholder: what `evalcase new` and `evalcase import` write where a person
must decide, and what lint's EC451 (``placeholder``) refuses until it is filled in.

On the ground floor so the writers need not import lint's rule registry to spell it (an
import of ``evalcase.lint.rules`` loads every rule).
"""

PREFIX = "TODO:"


def make(hint: str) -> str:
    """The placeholder evalcase writes for a value a person must fill in."""
    return f"{PREFIX} {hint}"


def is_placeholder(value: object) -> bool:
    return isinstance(value, str) and value.lstrip().startswith(PREFIX)
