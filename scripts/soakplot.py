"""A line chart as a PNG, with nothing but the standard library (zlib for the image data).

Used by soak.py to draw the soak's samples: one panel per series, stacked, sharing the x axis
(minutes since the start), each with its title, its y range and optional dashed limit lines.
Text is a 5x7 pixel font (upper case, digits and a little punctuation).
"""

import math
import struct
import zlib

# 5x7 glyphs, one int per row, bit 4 the leftmost pixel.
FONT = {
    "0": (0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E),
    "1": (0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E),
    "2": (0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F),
    "3": (0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E),
    "4": (0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02),
    "5": (0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E),
    "6": (0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E),
    "7": (0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08),
    "8": (0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E),
    "9": (0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C),
    "A": (0x0E, 0x11, 0x11, 0x11, 0x1F, 0x11, 0x11),
    "B": (0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E),
    "C": (0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E),
    "D": (0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C),
    "E": (0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F),
    "F": (0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10),
    "G": (0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F),
    "H": (0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11),
    "I": (0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E),
    "J": (0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C),
    "K": (0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11),
    "L": (0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F),
    "M": (0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11),
    "N": (0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11),
    "O": (0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E),
    "P": (0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10),
    "Q": (0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D),
    "R": (0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11),
    "S": (0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E),
    "T": (0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04),
    "U": (0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E),
    "V": (0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04),
    "W": (0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A),
    "X": (0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11),
    "Y": (0x11, 0x11, 0x11, 0x0A, 0x04, 0x04, 0x04),
    "Z": (0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F),
    ".": (0, 0, 0, 0, 0, 0x0C, 0x0C),
    ":": (0, 0x0C, 0x0C, 0, 0x0C, 0x0C, 0),
    "-": (0, 0, 0, 0x1F, 0, 0, 0),
    "/": (0, 0x01, 0x02, 0x04, 0x08, 0x10, 0),
    "(": (0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02),
    ")": (0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08),
    "%": (0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03),
    "=": (0, 0, 0x1F, 0, 0x1F, 0, 0),
    ",": (0, 0, 0, 0, 0x0C, 0x04, 0x08),
    "_": (0, 0, 0, 0, 0, 0, 0x1F),
    "<": (0x02, 0x04, 0x08, 0x10, 0x08, 0x04, 0x02),
    ">": (0x08, 0x04, 0x02, 0x01, 0x02, 0x04, 0x08),
    "+": (0, 0x04, 0x04, 0x1F, 0x04, 0x04, 0),
    "*": (0, 0x04, 0x15, 0x0E, 0x15, 0x04, 0),
    " ": (0, 0, 0, 0, 0, 0, 0),
}

WHITE = (255, 255, 255)
BLACK = (0, 0, 0)
GREY = (200, 200, 200)
BLUE = (31, 90, 180)
RED = (200, 40, 40)
ORANGE = (230, 130, 20)


class Canvas:
    """An RGB raster written out as a PNG."""

    def __init__(self, width, height):
        self.width, self.height = width, height
        self.pixels = bytearray(WHITE * (width * height))

    def set(self, x, y, color):
        if 0 <= x < self.width and 0 <= y < self.height:
            i = 3 * (y * self.width + x)
            self.pixels[i:i + 3] = bytes(color)

    def line(self, x0, y0, x1, y1, color, dash=0, thick=1):
        """Bresenham's line; with dash > 0, dash pixels on and dash off."""
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        err, step = dx + dy, 0
        while True:
            if not dash or (step // dash) % 2 == 0:
                for t in range(thick):
                    self.set(x0, y0 + t, color)
            if x0 == x1 and y0 == y1:
                return
            step += 1
            e2 = 2 * err
            if e2 >= dy:
                err += dy
                x0 += sx
            if e2 <= dx:
                err += dx
                y0 += sy

    def text(self, x, y, text, color=BLACK, scale=2):
        """Draws text with its top left at (x, y); returns the x after it."""
        for ch in text.upper():
            glyph = FONT.get(ch, FONT["*"])
            for row, bits in enumerate(glyph):
                for col in range(5):
                    if bits & (0x10 >> col):
                        for sy in range(scale):
                            for sx in range(scale):
                                self.set(x + col * scale + sx, y + row * scale + sy, color)
            x += 6 * scale
        return x

    def png(self):
        rows = b"".join(
            b"\x00" + bytes(self.pixels[3 * y * self.width:3 * (y + 1) * self.width])
            for y in range(self.height))

        def chunk(kind, data):
            body = kind + data
            return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

        header = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)
        return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
                + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))


def nice_step(span):
    """The smallest of 1, 2, 5 and 2.5 times a power of ten that covers span in 4 steps."""
    raw = max(span, 1e-9) / 4
    power = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if m * power >= raw:
            return m * power
    return 10 * power


def label(value):
    if value == int(value):
        return str(int(value))
    return f"{value:.2f}" if abs(value) < 10 else f"{value:.1f}"


def chart(path, title, panels, x_max, width=1100, panel_height=210):
    """Writes a PNG of stacked panels.

    panels: dicts with "title", "points" ([(minute, value)]), optionally "limits"
    ([(value, label)] drawn dashed in red) and "color".
    """
    left, right, top, gap = 90, 30, 40, 56
    height = top + len(panels) * (panel_height + gap) + 16
    canvas = Canvas(width, height)
    canvas.text(left, 10, title, scale=2)
    plot_w = width - left - right
    x_max = max(x_max, 1e-9)
    for n, panel in enumerate(panels):
        y0 = top + n * (panel_height + gap) + 24
        h = panel_height - 24
        canvas.text(left, y0 - 20, panel["title"], scale=2)
        values = [v for _, v in panel["points"]] + [v for v, _ in panel.get("limits", [])]
        step = nice_step(max(values + [1e-9]) * 1.05)
        lo, hi = 0.0, 4 * step
        # Frame, horizontal grid lines and their labels.
        for i in range(5):
            gy = y0 + h - round(h * i / 4)
            canvas.line(left, gy, left + plot_w, gy, GREY)
            text = label(lo + (hi - lo) * i / 4)
            canvas.text(left - 8 - 6 * 2 * len(text), gy - 7, text, scale=2)
        canvas.line(left, y0, left, y0 + h, BLACK)
        canvas.line(left + plot_w, y0, left + plot_w, y0 + h, BLACK)
        # Vertical ticks each minute (each 5 past 20 minutes), labelled below the last panel.
        tick = 1 if x_max <= 20 else 5
        minute = 0
        while minute <= x_max + 1e-9:
            gx = left + round(plot_w * minute / x_max)
            canvas.line(gx, y0 + h, gx, y0 + h + 5, BLACK)
            canvas.text(gx - 6 * len(str(minute)), y0 + h + 8, str(minute), scale=2)
            minute += tick

        def xy(point):
            x, v = point
            return (left + round(plot_w * x / x_max),
                    y0 + h - round(h * (v - lo) / (hi - lo)))

        for value, text in panel.get("limits", []):
            _, ly = xy((0, value))
            canvas.line(left, ly, left + plot_w, ly, RED, dash=6)
            canvas.text(left + plot_w - 12 * len(text) - 4, ly - 18, text, color=RED, scale=2)
        points = [xy(p) for p in panel["points"]]
        for a, b in zip(points, points[1:]):
            canvas.line(a[0], a[1], b[0], b[1], panel.get("color", BLUE), thick=2)
        if len(points) == 1:
            canvas.line(points[0][0], points[0][1], points[0][0] + 1, points[0][1], BLUE, thick=2)
    canvas.text(left + plot_w // 2 - 42, height - 22, "minutes", scale=2)
    with open(path, "wb") as out:
        out.write(canvas.png())
