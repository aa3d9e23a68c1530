"""Tool handlers for the ``handler`` escape hatch test."""

from __future__ import annotations

from typing import Any

from evalcase.run.environment import HandlerError, StateHandle


def reserve(args: dict[str, Any], state: StateHandle) -> dict[str, Any]:
    stock = state.get(f"stock.{args['order_id']}")
    if not stock:
        raise HandlerError("out_of_stock", "nothing left")
    state.increment(f"stock.{args['order_id']}", -1)
    return {"reserved": True, "left": stock - 1}
