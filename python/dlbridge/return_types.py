"""The named tuples some reductions return, as ``torch.return_types``.

``t.max(dim)`` returns ``dlbridge.return_types.max(values, indices)``: a
tuple (so ``values, indices = t.max(0)`` works) whose fields also have names.
"""

from operator import itemgetter as _item

__all__ = ["max", "min"]


def _return_type(name):
    def __new__(cls, sequence):
        values, indices = sequence
        return tuple.__new__(cls, (values, indices))

    def __repr__(self):
        return f"dlbridge.return_types.{name}(\nvalues={self[0]!r},\nindices={self[1]!r})"

    def __reduce__(self):
        return (type(self), (tuple(self),))

    return type(name, (tuple,), {
        "__slots__": (), "__module__": __name__, "__qualname__": name,
        "__new__": __new__, "__repr__": __repr__, "__reduce__": __reduce__,
        "n_fields": 2, "n_sequence_fields": 2, "n_unnamed_fields": 0,
        "values": property(_item(0), doc="the extreme values"),
        "indices": property(_item(1), doc="where they are along the dimension"),
    })


max = _return_type("max")
min = _return_type("min")
