"""Adapters: a user's callable, an external program, or an OpenDP or diffprivlib object as a batched
mechanism; loading and recognising what ``--mechanism`` names.
"""
