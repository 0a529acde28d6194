"""Prices as the till shows them."""


def format_cents(cents: int) -> str:
    """1234 -> '12.34'."""
    sign = "-" if cents < 0 else ""
    cents = abs(cents)
    return f"{sign}{cents // 100}.{cents % 100:02d}"


def apply_discount(cents: int, percent: int) -> int:
    """The price after a discount, rounded down to the cent."""
    if not 0 <= percent <= 100:
        raise ValueError(f"discount must be 0-100%, got {percent}")
    return cents * (100 - percent) // 100
