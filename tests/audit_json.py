"""The audit's JSON without its timings: what two runs of one audit that should agree are compared by."""

from __future__ import annotations

import json


def timeless_json(result) -> str:
    """The audit's JSON (``to_dict``) without its timings, the one part that differs between two runs."""
    def timeless(value):
        if isinstance(value, dict):
            return {key: timeless(item) for key, item in value.items() if "seconds" not in key}
        return [timeless(item) for item in value] if isinstance(value, (list, tuple)) else value
    return json.dumps(timeless(result.to_dict()), sort_keys=True, default=repr)
