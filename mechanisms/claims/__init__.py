"""Claims: privacy notions, the MI budgets and event checks they imply, parsing, group-privacy
conversion between relations, a catalog entry's guarantee, and exact privacy profiles.
"""
