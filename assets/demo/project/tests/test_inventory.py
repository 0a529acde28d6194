from shop.inventory import Inventory, Item


def test_add_merges_quantities():
    inv = Inventory()
    inv.add(Item("A1", "Apples", 100, 2))
    inv.add(Item("A1", "Apples", 100, 3))
    assert inv.items["A1"].quantity == 5


def test_total_value():
    inv = Inventory()
    inv.add(Item("A1", "Apples", 100, 2))
    inv.add(Item("B1", "Bread", 250, 1))
    assert inv.total_value() == 450
