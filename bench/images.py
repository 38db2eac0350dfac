"""Product images: what checking and re-encoding an upload costs (`PillowImages.clean`)
against only decoding the same file with Pillow, measured in the same run; and the
downscale with and without the box reduction first (`reducing_gap`).

Run from the repository root: `.venv/bin/python -m bench.images`.
"""

from __future__ import annotations

import functools
import io
import random

from PIL import Image

from adapters_formats.images import PillowImages
from bench.timing import best

CODEC = PillowImages()


def picture(kind: str, size: tuple[int, int], grain: float = 0.2) -> bytes:
    """Smooth gradients with some grain, as a rendered product picture looks."""
    rng = random.Random(size[0])
    image = Image.linear_gradient("L").resize(size).convert("RGB")
    noise = Image.effect_noise(size, 24).convert("RGB")
    mixed = Image.blend(image, noise, grain)
    mixed.putpixel((rng.randrange(size[0]), 0), (255, 0, 0))
    out = io.BytesIO()
    mixed.save(out, kind, **({"quality": 85} if kind == "JPEG" else {}))
    return out.getvalue()


def decode(data: bytes) -> None:
    Image.open(io.BytesIO(data)).load()


def downscale(image: Image.Image, gap: float | None) -> None:
    image.copy().thumbnail((1600, 1600), Image.Resampling.LANCZOS, reducing_gap=gap)


def main() -> None:
    for kind, size, grain in (("JPEG", (800, 600), 0.2), ("JPEG", (1920, 1080), 0.2),
                              ("PNG", (1024, 768), 0.2), ("JPEG", (4096, 3072), 0.2),
                              ("PNG", (4096, 4096), 0.0)):
        data = picture(kind, size, grain)
        alone = best(functools.partial(decode, data), 5)
        clean = best(functools.partial(CODEC.clean, data, None), 5)
        print(f"{kind:4} {size[0]}x{size[1]} {len(data) / 1024:6.0f} KiB: decode "
              f"{alone * 1e3:6.0f} ms, clean {clean * 1e3:6.0f} ms ({clean / alone:4.1f} x "
              "the decode)")
    big = Image.open(io.BytesIO(picture("PNG", (4096, 4096), 0.0)))
    big.load()
    for gap in (None, 1.0):
        took = best(functools.partial(downscale, big, gap), 3)
        print(f"downscale 4096 -> 1600, reducing_gap={gap}: {took * 1e3:.0f} ms")


if __name__ == "__main__":
    main()
