"""The released parts of a fitted estimator: public fitted attributes, recursively, trees through their arrays.

A fitted scikit-learn-style estimator releases what its fit wrote on it: the public attributes whose
names end in ``_`` (``coef_``, ``classes_``, ``intercept_`` …; scikit-learn's convention for fitted
state, https://scikit-learn.org/stable/developers/develop.html#estimated-attributes). Ensembles and
nested estimators hold further estimators there:

- a template in ``estimator_`` (an unfitted estimator: its class is released, its parameters were
  given, not learned);
- fitted members in ``estimators_`` (a list, or an object array as gradient boosting keeps them)
  and in ``named_estimators_``;
- the steps of a :class:`~sklearn.pipeline.Pipeline` (``steps``, a list of (name, estimator));
- a decision tree's Cython ``tree_`` (:class:`sklearn.tree._tree.Tree`), which has no ``__dict__``:
  it is released through its node arrays (:data:`TREE_ARRAYS`), the whole fitted tree.

:func:`estimator_parts` lists an object's parts as (name suffix, value) for
:func:`mechanisms.outputs.encoding.output_features` to walk on: the walk is recursive, so a forest's
trees, a pipeline's last step and a boosting stage's trees are encoded by the same rule.
"""

from __future__ import annotations

__all__ = ["TREE_ARRAYS", "estimator_parts", "holds_estimators", "is_estimator"]

#: A fitted tree's node arrays (:class:`sklearn.tree._tree.Tree`): structure, split rules and leaf values.
TREE_ARRAYS = ("children_left", "children_right", "feature", "threshold", "value", "n_node_samples",
               "weighted_n_node_samples", "impurity")


def is_estimator(obj) -> bool:
    """Whether ``obj`` is an estimator (it has a callable ``fit``) and not a class."""
    return not isinstance(obj, type) and callable(getattr(obj, "fit", None))


def _is_tree(obj) -> bool:
    """Whether ``obj`` is a fitted tree structure: ``node_count`` and every array of :data:`TREE_ARRAYS`."""
    return (not isinstance(obj, type) and isinstance(getattr(obj, "node_count", None), int)
            and all(hasattr(obj, name) for name in TREE_ARRAYS))


def holds_estimators(values) -> bool:
    """Whether a list or tuple ``values`` is non-empty and holds estimators or trees only (an ensemble's members)."""
    return bool(values) and all(is_estimator(v) or _is_tree(v) for v in values)


def _steps(obj) -> list | None:
    """A pipeline's ``steps`` as (name, estimator) pairs, or None."""
    steps = getattr(obj, "steps", None)
    if not isinstance(steps, list) or not steps:
        return None
    if not all(isinstance(s, tuple) and len(s) == 2 and isinstance(s[0], str) for s in steps):
        return None
    return steps


def estimator_parts(obj) -> list | None:
    """The released parts of an estimator or a fitted tree, as (name suffix, value), or None for neither.

    - a fitted tree (:func:`_is_tree`): ``.node_count`` and each of :data:`TREE_ARRAYS`;
    - a pipeline: ``.steps['name']`` for each step (an estimator, or ``'passthrough'``/None);
    - an estimator with public fitted attributes: ``.name_`` for each, in sorted order;
    - an estimator without any (a template, or a pipeline's unfitted step): its class, as one
      categorical part ``=<ClassName>`` (suffix ``=<...>`` with value None, which the caller
      records as a name with value 0).

    Examples
    --------
    >>> class Template:
    ...     def fit(self, X, y):
    ...         return self
    >>> estimator_parts(Template())
    [('=<Template>', None)]
    """
    if _is_tree(obj):
        return [(".node_count", obj.node_count)] + [(f".{name}", getattr(obj, name)) for name in TREE_ARRAYS]
    if not is_estimator(obj):
        return None
    steps = _steps(obj)
    if steps is not None:
        return [(f".steps[{name!r}]", step) for name, step in steps]
    attributes = vars(obj) if hasattr(obj, "__dict__") else {}
    fitted = {name: value for name, value in attributes.items() if name.endswith("_") and not name.startswith("_")}
    if not fitted:
        return [(f"=<{type(obj).__name__}>", None)]
    return [(f".{name}", fitted[name]) for name in sorted(fitted)]
