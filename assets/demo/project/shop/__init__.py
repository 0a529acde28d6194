"""Stock levels and prices for a corner shop."""

from shop.inventory import Inventory, Item

__all__ = ["Inventory", "Item"]
