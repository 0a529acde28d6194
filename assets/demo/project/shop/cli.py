"""The `shop` command: look at the stock from a terminal."""

import argparse

from shop.inventory import Inventory, Item
from shop.pricing import format_cents


def sample() -> Inventory:
    inv = Inventory()
    inv.add(Item("A100", "Apples (1 kg)", 320, 14))
    inv.add(Item("B200", "Bread, sourdough", 450, 3))
    inv.add(Item("C300", "Coffee beans (250 g)", 899, 0))
    inv.add(Item("M400", "Milk (1 l)", 129, 22))
    return inv


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="shop")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("stock", help="list every item and its quantity")
    sub.add_parser("value", help="the value of the stock")
    args = parser.parse_args(argv)

    inv = sample()
    if args.command == "stock":
        for item in inv.items.values():
            print(f"{item.sku}  {item.name:<24} {item.quantity:>4}")
    elif args.command == "value":
        print(format_cents(inv.total_value()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
