"""Product catalogs of the simulated hotel and airline shops.

Each store sells about ten products. A hotel room has a room type and a stay length (nights); an
airline fare has a cabin class, a flight type and a fare rule. `base_price` is the floor price the
shop quotes a fresh session; the storefront raises it as a session shows more interest.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from phantom_assets.constants import STORES

__all__ = ["CATALOGS", "Catalog", "Product", "catalog_for"]


@dataclass(frozen=True)
class Product:
    """One product of a store.

    Attributes:
        product_id: Stable id used in pages (`/hotel/room/<id>`) and exports.
        name: Human-readable title (shown in hover texts).
        base_price: Floor price in EUR for the whole offer.
        room_type: Hotel only: single, double, twin, family, deluxe, executive or suite.
        nights: Hotel only: length of stay of the offer.
        cabin_class: Airline only: economy, premium_economy, business or first.
        flight_type: Airline only: one_way, round_trip or multi_city.
        fare_rule: Airline only: basic, standard or flexible.
    """

    product_id: str
    name: str
    base_price: float
    room_type: str | None = None
    nights: int | None = None
    cabin_class: str | None = None
    flight_type: str | None = None
    fare_rule: str | None = None


@dataclass(frozen=True)
class Catalog:
    """The products of one store, in a fixed order (the product index used by the simulator)."""

    store: str
    products: tuple[Product, ...]

    @property
    def size(self) -> int:
        """Number of products."""
        return len(self.products)

    @property
    def base_prices(self) -> np.ndarray:
        """Base prices as a float64 array in catalog order."""
        return np.array([p.base_price for p in self.products], dtype=np.float64)

    def index_of(self, product_id: str) -> int:
        """Return the catalog index of `product_id`.

        Raises:
            ValueError: if the store has no such product.
        """
        for i, product in enumerate(self.products):
            if product.product_id == product_id:
                return i
        raise ValueError(f"store {self.store!r} has no product {product_id!r}")


_HOTEL = Catalog(
    store="hotel",
    products=(
        Product("R01", "Standard Single Room", 89.0, room_type="single", nights=1),
        Product("R02", "Standard Double Room", 159.0, room_type="double", nights=2),
        Product("R03", "Twin Room", 169.0, room_type="twin", nights=2),
        Product("R04", "Superior Double Room", 279.0, room_type="double", nights=3),
        Product("R05", "Family Room", 389.0, room_type="family", nights=3),
        Product("R06", "Deluxe King Room", 259.0, room_type="deluxe", nights=2),
        Product("R07", "Junior Suite", 519.0, room_type="suite", nights=3),
        Product("R08", "Honeymoon Suite", 899.0, room_type="suite", nights=4),
        Product("R09", "Executive Room", 199.0, room_type="executive", nights=1),
        Product("R10", "Penthouse Suite", 1190.0, room_type="suite", nights=2),
    ),
)

_AIRLINE = Catalog(
    store="airline",
    products=(
        Product(
            "F01",
            "Economy Basic",
            79.0,
            cabin_class="economy",
            flight_type="one_way",
            fare_rule="basic",
        ),
        Product(
            "F02",
            "Economy Standard",
            119.0,
            cabin_class="economy",
            flight_type="one_way",
            fare_rule="standard",
        ),
        Product(
            "F03",
            "Economy Flex Return",
            239.0,
            cabin_class="economy",
            flight_type="round_trip",
            fare_rule="flexible",
        ),
        Product(
            "F04",
            "Premium Economy Return",
            389.0,
            cabin_class="premium_economy",
            flight_type="round_trip",
            fare_rule="standard",
        ),
        Product(
            "F05",
            "Business Saver",
            549.0,
            cabin_class="business",
            flight_type="one_way",
            fare_rule="basic",
        ),
        Product(
            "F06",
            "Business Flex Return",
            1190.0,
            cabin_class="business",
            flight_type="round_trip",
            fare_rule="flexible",
        ),
        Product(
            "F07",
            "First Class Return",
            2490.0,
            cabin_class="first",
            flight_type="round_trip",
            fare_rule="flexible",
        ),
        Product(
            "F08",
            "Economy Red-eye",
            59.0,
            cabin_class="economy",
            flight_type="one_way",
            fare_rule="basic",
        ),
        Product(
            "F09",
            "Multi-city Economy",
            329.0,
            cabin_class="economy",
            flight_type="multi_city",
            fare_rule="standard",
        ),
        Product(
            "F10",
            "Premium Flex One-way",
            299.0,
            cabin_class="premium_economy",
            flight_type="one_way",
            fare_rule="flexible",
        ),
    ),
)

CATALOGS: dict[str, Catalog] = {"hotel": _HOTEL, "airline": _AIRLINE}
assert tuple(CATALOGS) == STORES, "one catalog per store of constants.STORES"


def catalog_for(store: str) -> Catalog:
    """Return the catalog of `store`.

    Raises:
        ValueError: if `store` is not one of `constants.STORES`.
    """
    if store not in CATALOGS:
        raise ValueError(f"unknown store {store!r}; choose one of {STORES}")
    return CATALOGS[store]
