"""Conversion bounds between privacy notions, one module per paper."""
