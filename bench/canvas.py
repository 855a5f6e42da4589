"""A tiny RGB canvas for the benchmarks' charts: filled rectangles, text in a
3x5 pixel font, and a PNG writer, so that results get a chart on hosts without
a plotting library (the GPU hosts have none)."""
import struct
import zlib

# 3x5 glyphs, rows top to bottom; unknown characters draw as a space
GLYPHS = {
    "0": "111101101101111", "1": "010110010010111", "2": "111001111100111",
    "3": "111001111001111", "4": "101101111001001", "5": "111100111001111",
    "6": "111100111101111", "7": "111001001001001", "8": "111101111101111",
    "9": "111101111001111", ".": "000000000000010", " ": "000000000000000",
    "-": "000000111000000", "/": "001001010100100", "A": "010101111101101",
    "B": "110101110101110", "E": "111100110100111", "G": "111100101101111",
    "H": "101101111101101", "M": "101111111101101", "O": "111101101101111",
    "P": "111101111100100", "Q": "111101101111001", "R": "110101110101101",
    "S": "111100111001111", "W": "101101111111101", "X": "101101010101101",
    "C": "111100100100111", "D": "110101101101110", "F": "111100110100100",
    "I": "111010010010111", "K": "101101110101101", "L": "100100100100111",
    "N": "110101101101101", "T": "111010010010010", "U": "101101101101111",
    "=": "000111000111000",
}


class Canvas:
    """W x H pixels, white; coordinates from the top left corner."""

    def __init__(self, width, height):
        self.w, self.h = width, height
        self.rows = [bytearray(b"\xff" * (3 * width)) for _ in range(height)]

    def rect(self, x0, y0, x1, y1, rgb):
        """Fills [x0, x1) x [y0, y1), clipped to the canvas."""
        x0, x1 = max(x0, 0), min(x1, self.w)
        if x0 >= x1:
            return
        for y in range(max(y0, 0), min(y1, self.h)):
            self.rows[y][3 * x0:3 * x1] = bytes(rgb) * (x1 - x0)

    def text(self, x, y, s, scale=2, rgb=(0, 0, 0)):
        """Draws s (upper-cased) with glyphs of 3x5 squares of scale pixels."""
        for ch in s.upper():
            for i, bit in enumerate(GLYPHS.get(ch, GLYPHS[" "])):
                if bit == "1":
                    gx, gy = x + (i % 3) * scale, y + (i // 3) * scale
                    self.rect(gx, gy, gx + scale, gy + scale, rgb)
            x += 4 * scale

    def save(self, path):
        """Writes the canvas as an 8-bit RGB PNG."""
        def chunk(tag, data):
            return (struct.pack(">I", len(data)) + tag + data
                    + struct.pack(">I", zlib.crc32(tag + data)))
        raw = b"".join(b"\x00" + bytes(row) for row in self.rows)
        with open(path, "wb") as f:
            f.write(b"\x89PNG\r\n\x1a\n"
                    + chunk(b"IHDR", struct.pack(">IIBBBBB", self.w, self.h, 8, 2, 0, 0, 0))
                    + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))
