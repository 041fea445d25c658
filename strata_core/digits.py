"""Numbers as the engine and the ROCm runtime read them: ASCII digits only. ``str.isdecimal``
and ``int`` also take full-width and other Unicode digits, which those refuse."""


def is_digits(text: str) -> bool:
    """``text`` is one or more of 0-9."""
    return text.isascii() and text.isdecimal()
