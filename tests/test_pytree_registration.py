"""Custom pytree nodes (``register_pytree_node``, ``register_pytree_node_class``,
``register_dataclass``), the key-path API, ``is_leaf``, ``tree_transpose``, and
every transform, ``jit``, the optimizers and ``ravel_pytree`` taking registered
classes apart as ``jax.tree_util`` does.

Each transform's result for a registered class is compared with its result for
the same numbers held in a dict (which the transforms took before)."""

from __future__ import annotations

import collections
import dataclasses
import functools
import operator
from typing import Any

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp
from tapegrad import tree_util

# --- the classes -----------------------------------------------------------------------------------


@tg.register_dataclass
@dataclasses.dataclass
class Linear:
    w: Any
    b: Any
    act: str = dataclasses.field(default="tanh", metadata=dict(static=True))


@functools.partial(tg.register_dataclass, data_fields=["x", "y"], meta_fields=["op"])
@dataclasses.dataclass
class Explicit:
    x: Any
    y: Any
    op: str


class Affine:
    """Registered with functions; its unflatten bypasses ``__init__`` and reads the aux data."""

    def __init__(self, w: Any, b: Any, scale: float = 1.0) -> None:
        self.w, self.b, self.scale = w, b, scale


unflatten_calls: list[Any] = []


def _affine_unflatten(aux: Any, children: Any) -> Affine:
    unflatten_calls.append((aux, type(children)))
    obj = object.__new__(Affine)
    obj.w, obj.b = children
    (obj.scale,) = aux
    return obj


tg.register_pytree_node(Affine, lambda a: ((a.w, a.b), (a.scale,)), _affine_unflatten)


@tg.register_pytree_node_class
class Pair:
    def __init__(self, first: Any, second: Any) -> None:
        self.first, self.second = first, second

    def tree_flatten(self) -> tuple[tuple[Any, Any], None]:
        return (self.first, self.second), None

    @classmethod
    def tree_unflatten(cls, aux: Any, children: Any) -> Pair:
        return cls(*children)


def _rng() -> np.random.Generator:
    return np.random.default_rng(0)


def _linear() -> Linear:
    rng = _rng()
    return Linear(rng.standard_normal((3, 2)), rng.standard_normal(2))


def _as_dict(p: Linear) -> dict[str, Any]:
    return {"w": p.w, "b": p.b}


def _loss(p: Any, x: Any) -> Any:
    return tnp.sum(tnp.tanh(x @ p.w + p.b) ** 2)


def _loss_dict(p: dict[str, Any], x: Any) -> Any:
    return tnp.sum(tnp.tanh(x @ p["w"] + p["b"]) ** 2)


X = _rng().standard_normal((4, 3))


def _close(a: Any, b: Any) -> None:
    la, da = tg.tree_flatten(a)
    lb, db = tg.tree_flatten(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-12, atol=1e-14)


def _same_fields(got: Linear, want: dict[str, Any]) -> None:
    assert type(got) is Linear and got.act == "tanh"
    _close((got.w, got.b), (want["w"], want["b"]))


# --- registration --------------------------------------------------------------------------------


def test_dataclass_fields_split_into_data_and_static_meta() -> None:
    p = _linear()
    leaves, treedef = tg.tree_flatten(p)
    assert [x is y for x, y in zip(leaves, (p.w, p.b))] == [True, True]
    assert treedef.meta == ("tanh",) and treedef.num_leaves == 2
    back = tg.tree_unflatten(treedef, [1.0, 2.0])
    assert back == Linear(1.0, 2.0, "tanh")
    other = Linear(p.w, p.b, act="relu")
    assert tg.tree_structure(other) != treedef  # (meta fields are part of the structure)


def test_dataclass_with_explicit_fields_as_jax_writes_it() -> None:
    m = Explicit(np.ones(3), np.arange(3.0), "add")
    leaves, treedef = tg.tree_flatten(m)
    assert len(leaves) == 2 and treedef.meta == ("add",)
    assert tg.tree_unflatten(treedef, leaves).op == "add"


def test_dataclass_registration_errors_are_jaxs() -> None:
    @dataclasses.dataclass
    class C:
        a: Any
        b: Any

    with pytest.raises(ValueError, match="Missing fields: {'b'}"):
        tg.register_dataclass(C, data_fields=["a"], meta_fields=[])
    with pytest.raises(ValueError, match="Unexpected fields: {'z'}"):
        tg.register_dataclass(C, data_fields=["a", "b", "z"], meta_fields=[])
    with pytest.raises(TypeError, match="must both be specified"):
        tg.register_dataclass(C, data_fields=["a", "b"])

    class NotADataclass:
        pass

    with pytest.raises(TypeError, match="required when nodetype is not a dataclass"):
        tg.register_dataclass(NotADataclass)


def test_dataclass_drop_fields_and_decorator_factory() -> None:
    @tg.register_dataclass(drop_fields=["cache"])
    @dataclasses.dataclass
    class D:
        a: Any
        cache: Any = None

    leaves, treedef = tg.tree_flatten(D(np.ones(2), cache="dropped"))
    assert len(leaves) == 1
    assert tg.tree_unflatten(treedef, [3.0]) == D(3.0, None)


def test_registered_node_gets_its_aux_data_and_children_as_a_tuple() -> None:
    unflatten_calls.clear()
    a = Affine(np.ones(2), np.zeros(2), scale=3.0)
    back = tg.tree_map(lambda x: x + 1, a)
    assert type(back) is Affine and back.scale == 3.0
    np.testing.assert_array_equal(back.w, 2.0)
    assert unflatten_calls == [((3.0,), tuple)]


def test_registering_twice_or_a_builtin_raises() -> None:
    with pytest.raises(ValueError, match="Duplicate custom PyTreeDef type registration"):
        tg.register_pytree_node(Affine, lambda a: ((), None), lambda aux, c: Affine(0, 0))
    with pytest.raises(ValueError, match="Duplicate"):
        tg.register_pytree_node(tuple, lambda a: ((), None), lambda aux, c: ())


def test_subclasses_are_not_registered_and_none_is_an_empty_subtree() -> None:
    class Sub(Pair):
        pass

    assert tg.tree_leaves(Sub(1.0, 2.0))[0].__class__ is Sub  # (a leaf, as in JAX)
    leaves, treedef = tg.tree_flatten(Pair(None, [None, 1.0]))
    assert leaves == [1.0]
    back = tg.tree_unflatten(treedef, [5.0])
    assert back.first is None and back.second == [None, 5.0]


def test_ordereddict_and_defaultdict_are_nodes() -> None:
    od = collections.OrderedDict([("b", 1.0), ("a", 2.0)])
    assert tg.tree_leaves(od) == [1.0, 2.0]  # (insertion order, as in JAX)
    back = tg.tree_map(lambda x: x * 10, od)
    assert type(back) is collections.OrderedDict and list(back.items()) == [("b", 10.0), ("a", 20.0)]
    dd = collections.defaultdict(list, {"b": 1.0, "a": 2.0})
    back = tg.tree_map(lambda x: x + 1, dd)
    assert type(back) is collections.defaultdict and back.default_factory is list
    assert dict(back) == {"a": 3.0, "b": 2.0}


def test_register_static_keeps_the_instance_in_the_structure() -> None:
    @tg.register_static
    class Tag(str):
        pass

    leaves, treedef = tg.tree_flatten((1.0, Tag("add")))
    assert leaves == [1.0]
    assert tg.tree_unflatten(treedef, [2.0]) == (2.0, "add")


# --- is_leaf, key paths, tree_transpose ----------------------------------------------------------


def test_is_leaf_on_flatten_leaves_and_map() -> None:
    tree = {"a": (1.0, 2.0), "b": [(3.0, 4.0)], "c": None}
    is_pair = lambda x: type(x) is tuple  # noqa: E731
    assert tg.tree_leaves(tree, is_leaf=is_pair) == [(1.0, 2.0), (3.0, 4.0)]
    leaves, treedef = tg.tree_flatten(tree, is_leaf=is_pair)
    assert tg.tree_unflatten(treedef, ["x", "y"]) == {"a": "x", "b": ["y"], "c": None}
    assert tg.tree_map(lambda p: p[0] + p[1], tree, is_leaf=is_pair) == {"a": 3.0, "b": [7.0], "c": None}
    # None is a leaf where is_leaf says so (JAX's ``is_leaf=lambda x: x is None`` idiom)
    assert tg.tree_leaves([None, 1.0], is_leaf=lambda x: x is None) == [None, 1.0]
    # registered nodes too
    p = Linear(np.ones(2), np.zeros(2))
    assert tg.tree_leaves([p, 1.0], is_leaf=lambda x: isinstance(x, Linear)) == [p, 1.0]


def test_unflatten_with_the_wrong_number_of_leaves_raises() -> None:
    treedef = tg.tree_structure(Pair(1.0, [2.0, None]))
    with pytest.raises(ValueError, match="Too few leaves for PyTreeDef; expected 2, got 1"):
        tg.tree_unflatten(treedef, [1.0])
    with pytest.raises(ValueError, match="Too many leaves"):
        tg.tree_unflatten(treedef, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="Too few leaves"):
        tg.tree_unflatten(tg.tree_structure(1.0), [])
    assert treedef.unflatten(iter([3.0, 4.0])).second == [4.0, None]  # (any iterable of leaves)


def test_tree_map_rest_may_be_deeper() -> None:
    got = tg.tree_map(lambda x, y: (x, y), [1, 2], [(3, 4), {"a": 5}])
    assert got == [(1, (3, 4)), (2, {"a": 5})]
    with pytest.raises(ValueError):
        tg.tree_map(lambda x, y: x, [1, 2], [1, 2, 3])
    with pytest.raises(ValueError):
        tg.tree_map(lambda x, y: x, {"a": 1}, {"b": 1})


def test_key_paths_of_every_node_kind() -> None:
    Point = collections.namedtuple("Point", "x y")
    tree = {"lin": Linear(1.0, 2.0), "aff": Affine(3.0, 4.0), "seq": [Point(5.0, 6.0)], "none": None}
    pairs, treedef = tg.tree_flatten_with_path(tree)
    assert [tg.keystr(p) for p, _ in pairs] == [
        "['aff'][<flat index 0>]", "['aff'][<flat index 1>]",
        "['lin'].w", "['lin'].b",
        "['seq'][0].x", "['seq'][0].y",
    ]
    assert [x for _, x in pairs] == tg.tree_leaves(tree)
    assert treedef == tg.tree_structure(tree)
    first = pairs[2][0]
    assert first == (tg.DictKey("lin"), tg.GetAttrKey("w"))
    assert pairs[4][0][1:] == (tg.SequenceKey(0), tg.GetAttrKey("x"))
    assert pairs[0][0][1] == tg.FlattenedIndexKey(0)
    assert tg.keystr(pairs[4][0], simple=True, separator="/") == "seq/0/x"
    assert tg.tree_leaves_with_path(tree) == pairs


def test_tree_map_with_path() -> None:
    tree = {"a": 1.0, "b": [2.0, Pair(3.0, None)]}
    got = tg.tree_map_with_path(lambda p, x, y: f"{tg.keystr(p)}={x + y}", tree, tree)
    assert got["a"] == "['a']=2.0" and got["b"][0] == "['b'][0]=4.0"
    assert got["b"][1].first == "['b'][1][<flat index 0>]=6.0" and got["b"][1].second is None


def test_is_leaf_with_paths() -> None:
    tree = {"a": [1.0, 2.0], "b": [3.0]}
    pairs, treedef = tg.tree_flatten_with_path(tree, is_leaf=lambda p, x: p == (tg.DictKey("a"),),
                                               is_leaf_takes_path=True)
    assert [x for _, x in pairs] == [[1.0, 2.0], 3.0]
    assert tg.tree_unflatten(treedef, [0, 1]) == {"a": 0, "b": [1]}


def test_tree_transpose() -> None:
    outer = tg.tree_structure([0, 0, 0])
    inner = tg.tree_structure(Pair(0, 0))
    trees = [Pair(i, 10 * i) for i in range(3)]
    got = tg.tree_transpose(outer, inner, trees)
    assert type(got) is Pair and got.first == [0, 1, 2] and got.second == [0, 10, 20]
    again = tg.tree_transpose(inner, outer, got)
    assert [(t.first, t.second) for t in again] == [(t.first, t.second) for t in trees]
    inferred = tg.tree_transpose(outer, None, trees)
    assert inferred.first == [0, 1, 2]
    with pytest.raises(TypeError, match="Mismatch"):
        tg.tree_transpose(outer, inner, trees[:2])


def test_treedef_reads_as_jaxs() -> None:
    assert repr(tg.tree_structure({"a": [1, (2,)], "b": None})) == "PyTreeDef({'a': [*, (*,)], 'b': None})"
    assert repr(tg.tree_structure(Linear(1, 2))) == "PyTreeDef(CustomNode(Linear[('tanh',)], [*, *]))"


def test_tree_util_namespace_mirrors_jax() -> None:
    for name in ("tree_map", "tree_flatten", "tree_unflatten", "tree_leaves", "tree_structure",
                 "tree_flatten_with_path", "tree_map_with_path", "tree_leaves_with_path", "keystr",
                 "register_pytree_node", "register_pytree_node_class", "register_dataclass",
                 "register_pytree_with_keys", "register_static", "tree_transpose", "tree_reduce",
                 "tree_all", "SequenceKey", "DictKey", "GetAttrKey", "FlattenedIndexKey"):
        assert getattr(tree_util, name) is getattr(tg, name), name
    assert tree_util.tree_reduce(operator.add, {"a": 1, "b": [2, 3]}) == 6
    assert tree_util.tree_all([True, (1, None)]) and not tree_util.tree_all([True, 0])


def test_register_pytree_with_keys_gives_its_keys() -> None:
    class Box:
        def __init__(self, v: Any) -> None:
            self.v = v

    tg.register_pytree_with_keys(Box, lambda b: (((tg.GetAttrKey("v"), b.v),), None),
                                 lambda aux, ch: Box(*ch))
    pairs, _ = tg.tree_flatten_with_path({"k": Box(1.0)})
    assert tg.keystr(pairs[0][0]) == "['k'].v"
    assert tg.tree_map(lambda x: x * 2, Box(3.0)).v == 6.0


# --- transforms ------------------------------------------------------------------------------------


def test_grad_and_value_and_grad() -> None:
    p = _linear()
    want = tg.grad(_loss_dict)(_as_dict(p), X)
    _same_fields(tg.grad(_loss)(p, X), want)
    v, g = tg.value_and_grad(_loss)(p, X)
    _close(v, _loss_dict(_as_dict(p), X))
    _same_fields(g, want)


def test_grad_of_registered_class_with_functions_and_none_children() -> None:
    a = Affine(np.ones(2) * 0.5, (np.zeros(2), None), scale=2.0)
    g = tg.grad(lambda a: a.scale * tnp.sum(tnp.sin(a.w) * tnp.exp(a.b[0])))(a)
    assert type(g) is Affine and g.scale == 2.0 and g.b[1] is None
    _close(g.w, 2.0 * np.cos(a.w))
    _close(g.b[0], 2.0 * np.sin(a.w))


def test_vjp_and_jvp() -> None:
    p = _linear()
    out, pullback = tg.vjp(_loss, p, X)
    (gp, gx) = pullback(1.0)
    want = tg.vjp(_loss_dict, _as_dict(p), X)[1](1.0)
    _same_fields(gp, want[0])
    _close(gx, want[1])
    t = Linear(np.ones((3, 2)), np.ones(2))
    primal, tangent = tg.jvp(lambda p: _loss(p, X), (p,), (t,))
    want_p, want_t = tg.jvp(lambda p: _loss_dict(p, X), (_as_dict(p),), (_as_dict(t),))
    _close((primal, tangent), (want_p, want_t))


def test_jvp_rejects_a_tangent_of_another_structure() -> None:
    p = _linear()
    with pytest.raises((TypeError, ValueError)):
        tg.jvp(lambda p: _loss(p, X), (p,), (Linear(np.ones((3, 2)), np.ones(2), act="relu"),))


@pytest.mark.parametrize("jac", [tg.jacrev, tg.jacfwd])
def test_jacobians_in_and_out(jac: Any) -> None:
    p = _linear()
    f = lambda p: Pair(p.w @ p.b, tnp.sum(p.b))  # noqa: E731
    f_dict = lambda p: (p["w"] @ p["b"], tnp.sum(p["b"]))  # noqa: E731
    J = jac(f)(p)
    want = jac(f_dict)(_as_dict(p))
    assert type(J) is Pair and type(J.first) is Linear
    _close((J.first.w, J.first.b, J.second.w, J.second.b),
           (want[0]["w"], want[0]["b"], want[1]["w"], want[1]["b"]))


def test_hessian() -> None:
    p = _linear()
    H = tg.hessian(lambda p: _loss(p, X))(p)
    want = tg.hessian(lambda p: _loss_dict(p, X))(_as_dict(p))
    assert type(H) is Linear and type(H.w) is Linear
    _close((H.w.w, H.w.b, H.b.w, H.b.b), (want["w"]["w"], want["w"]["b"], want["b"]["w"], want["b"]["b"]))


def test_vmap_in_axes_and_out_axes_as_registered_classes() -> None:
    rng = _rng()
    ps = Linear(rng.standard_normal((5, 3, 2)), rng.standard_normal(2))
    got = tg.vmap(_loss, in_axes=(Linear(0, None), None))(ps, X)
    want = [_loss_dict({"w": ps.w[i], "b": ps.b}, X) for i in range(5)]
    _close(got, np.array(want))
    out = tg.vmap(lambda p: Linear(p.w * 2, p.b), in_axes=(Linear(0, None),), out_axes=Linear(1, None))(ps)
    assert type(out) is Linear and out.w.shape == (3, 5, 2) and out.b.shape == (2,)
    _close(out.w, np.moveaxis(ps.w * 2, 0, 1))
    with pytest.raises(ValueError, match="in_axes"):  # (another meta field: not a prefix of the value)
        tg.vmap(_loss, in_axes=(Linear(0, None, act="relu"), None))(ps, X)


def test_vmap_of_grad_over_a_batch_of_registered_classes() -> None:
    rng = _rng()
    ps = Linear(rng.standard_normal((4, 3, 2)), rng.standard_normal((4, 2)))
    g = tg.vmap(tg.grad(_loss), in_axes=(0, None))(ps, X)
    assert type(g) is Linear
    for i in range(4):
        want = tg.grad(_loss_dict)({"w": ps.w[i], "b": ps.b[i]}, X)
        _close((g.w[i], g.b[i]), (want["w"], want["b"]))


def test_jit_takes_registered_classes_and_keys_on_meta_fields() -> None:
    traces = []

    def f(p: Linear, x: Any) -> Any:
        traces.append(p.act)
        h = x @ p.w + p.b
        return Pair(tnp.sum(tnp.tanh(h) if p.act == "tanh" else h), p)

    jf = tg.jit(f)
    p = _linear()
    for _ in range(3):
        out = jf(p, X)
    assert traces == ["tanh"]
    assert type(out) is Pair and type(out.second) is Linear
    _close(out.first, np.sum(np.tanh(X @ p.w + p.b)))
    out = jf(Linear(p.w, p.b, act="none"), X)  # another meta value: another signature
    assert traces == ["tanh", "none"]
    _close(out.first, np.sum(X @ p.w + p.b))
    jg = tg.jit(tg.grad(_loss))
    _same_fields(jg(p, X), tg.grad(_loss_dict)(_as_dict(p), X))
    _same_fields(jg(p, X), tg.grad(_loss_dict)(_as_dict(p), X))


def test_jit_with_unhashable_aux_data_says_so() -> None:
    class Bag:
        def __init__(self, v: Any, tags: list[str]) -> None:
            self.v, self.tags = v, tags

    tg.register_pytree_node(Bag, lambda b: ((b.v,), b.tags), lambda tags, ch: Bag(ch[0], tags))
    with pytest.raises(TypeError, match="must be hashable"):
        tg.jit(lambda b: b.v * 2)(Bag(np.ones(2), ["a"]))


def test_optimizers_step_registered_classes() -> None:
    p = _linear()
    for opt in (tg.optimizers.sgd(0.1, momentum=0.9), tg.optimizers.adam(0.1), tg.optimizers.rmsprop(0.1)):
        state = opt.init(p)
        state_d = opt.init(_as_dict(p))
        q, qd = p, _as_dict(p)
        for _ in range(3):
            q, state = opt.update(tg.grad(_loss)(q, X), state, q)
            qd, state_d = opt.update(tg.grad(_loss_dict)(qd, X), state_d, qd)
        _same_fields(q, qd)
    with pytest.raises(ValueError, match="different tree structures"):
        opt.update(tg.grad(_loss)(p, X), opt.init(p), Linear(p.w, p.b, act="relu"))


def test_ravel_pytree_round_trip_and_gradient() -> None:
    p = Affine(np.arange(6.0).reshape(2, 3), Linear(np.ones(2), np.float32(3.0)), scale=0.5)
    flat, unravel = tg.ravel_pytree(p)
    assert flat.shape == (9,)
    back = unravel(flat)
    assert type(back) is Affine and back.scale == 0.5 and type(back.b) is Linear
    _close(back.w, p.w)
    assert back.b.b.dtype == np.float32
    g = tg.grad(lambda v: tnp.sum(unravel(v).w ** 2) + unravel(v).b.b)(flat)
    _close(g, np.concatenate([2 * p.w.ravel(), np.zeros(2), [1.0]]))


def test_docstring_examples_run() -> None:
    import doctest

    from tapegrad import pytree

    res = doctest.testmod(pytree, extraglobs={"np": np, "tg": tg, "tnp": tnp, "dataclasses": dataclasses},
                          optionflags=doctest.NORMALIZE_WHITESPACE)
    assert res.attempted > 0 and res.failed == 0
