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


def reserve_then_fail(args: dict[str, Any], state: StateHandle) -> dict[str, Any]:
    """Writes, then fails: the environment must undo the write (atomic calls)."""
    state.increment(f"stock.{args['order_id']}", -1)
    state.set("holds.H1", {"order": args["order_id"]})
    raise HandlerError("payment_declined", "card declined")
