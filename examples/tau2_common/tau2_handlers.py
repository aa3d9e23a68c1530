"""tau2's ``calculate`` tool: an arithmetic expression of numbers, + - * /, parentheses.

tau2 checks the characters and calls Python's ``eval``; this walks the parsed expression
instead (only numbers and those operators), and rounds to 2 places like tau2:
``str(round(float(value), 2))``. Registered in evalcase.toml as ``tau2_calculate``.
"""

from __future__ import annotations

import ast
import operator
from typing import Any

from evalcase.run.environment import HandlerError

_OPS: dict[type, Any] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}


def _value(node: ast.AST) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return float(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return float(_OPS[type(node.op)](_value(node.left), _value(node.right)))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _value(node.operand)
        return -inner if isinstance(node.op, ast.USub) else inner
    raise HandlerError("invalid", "Invalid expression")


def calculate(args: dict[str, Any], state: Any) -> str:
    expression = str(args.get("expression", ""))
    if not all(char in "0123456789+-*/(). " for char in expression):
        raise HandlerError("invalid", "Invalid characters in expression")
    try:
        value = _value(ast.parse(expression, mode="eval").body)
    except (SyntaxError, ZeroDivisionError) as exc:
        raise HandlerError("invalid", str(exc)) from exc
    return str(round(value, 2))
