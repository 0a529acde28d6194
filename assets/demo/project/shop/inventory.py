"""The shop's stock: items, their prices and how many are on the shelf."""

from dataclasses import dataclass, field


@dataclass
class Item:
    sku: str
    name: str
    price_cents: int
    quantity: int = 0


@dataclass
class Inventory:
    items: dict[str, Item] = field(default_factory=dict)

    def add(self, item: Item) -> None:
        """Adds an item, or more of one already stocked."""
        if item.sku in self.items:
            self.items[item.sku].quantity += item.quantity
        else:
            self.items[item.sku] = item

    def remove(self, sku: str, quantity: int) -> None:
        """Takes `quantity` of an item off the shelf."""
        item = self.items[sku]
        item.quantity -= quantity

    def total_value(self) -> int:
        """What everything on the shelves is worth, in cents."""
        return sum(i.price_cents * i.quantity for i in self.items.values())

    def find(self, text: str) -> list[Item]:
        """Items whose name contains `text`, ignoring case."""
        needle = text.lower()
        return [i for i in self.items.values() if needle in i.name.lower()]
