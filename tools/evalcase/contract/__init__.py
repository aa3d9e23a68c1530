"""The executable case contract: how fields are classified (``fields``)."""
