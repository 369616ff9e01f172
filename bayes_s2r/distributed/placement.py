"""Place a batch on a device mesh, run a jitted batch function on it, bring the results back.

The batch (environments, episodes, draws) is split along its leading axis over the mesh's
one axis. `jax.jit` sees inputs that carry a `NamedSharding` and partitions the whole
computation accordingly (GSPMD): a `vmap` over the batch runs shard by shard on each device
with no code change in the function. Batches whose length is not a multiple of the device
count are padded by repeating the last element (a valid input, so no NaN appears) and the
padding is cut off the results.

Multiple processes (after `jax.distributed.initialize`): every process calls the same code
with the same host values; each one fills only the shards its own devices hold
(`jax.make_array_from_callback`), and `gather` assembles the global result on every process.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

from bayes_s2r.distributed.devices import BATCH_AXIS, batch_mesh
from bayes_s2r.errors import InputError

__all__ = [
    "Placed",
    "batch_length",
    "gather",
    "place_batch",
    "place_replicated",
    "put_global",
    "sharded_call",
    "unpad",
]


class Placed(NamedTuple):
    """A batch placed on a mesh.

    Attributes:
        tree: the padded batch; every leaf is a `jax.Array` sharded along its leading axis.
        length: the batch length before padding (results are cut back to it).
        mesh: the mesh the batch lives on.
    """

    tree: Any
    length: int
    mesh: Any


def batch_length(tree: Any, field: str = "batch") -> int:
    """The common leading-axis length of every leaf of `tree`; InputError if they differ."""
    leaves = jax.tree.leaves(tree)
    lengths = {int(np.shape(x)[0]) if np.ndim(x) >= 1 else -1 for x in leaves}
    if not leaves or len(lengths) != 1 or -1 in lengths or 0 in lengths:
        shapes = [tuple(np.shape(x)) for x in leaves]
        raise InputError(field, shapes, "arrays sharing one leading batch axis of length >= 1")
    return lengths.pop()


def _is_key(x: Any) -> bool:
    return hasattr(x, "dtype") and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)


def _pad(x: Any, extra: int) -> Any:
    if extra == 0:
        return x
    if isinstance(x, np.ndarray):
        return np.concatenate([x, np.repeat(x[-1:], extra, axis=0)])
    return jnp.concatenate([x, jnp.repeat(x[-1:], extra, axis=0)])


def put_global(x: Any, sharding: NamedSharding) -> jax.Array:
    """`x` (the same host value on every process) as a global array with `sharding`.

    One process: `jax.device_put`. Several: each process fills only the shards its devices
    hold, from its own copy of `x`.
    """
    if jax.process_count() == 1:
        return jax.device_put(x, sharding)
    if _is_key(x):
        impl = jax.random.key_impl(x)
        return jax.random.wrap_key_data(put_global(jax.random.key_data(x), sharding), impl=impl)
    if isinstance(x, jax.Array) and not x.is_fully_addressable:
        return jax.device_put(x, sharding)  # already global: reshard
    host = np.asarray(x)
    return jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])


def place_batch(tree: Any, devices: Any = None) -> Placed:
    """Pad the batch to a multiple of the device count and shard its leading axis.

    Args:
        tree: a pytree (NamedTuples, dicts, arrays) whose leaves share the leading batch axis.
        devices: which devices (see `bayes_s2r.distributed.devices`).

    Returns:
        `Placed(tree, length, mesh)`.

    Example:
        >>> import numpy as np
        >>> p = place_batch({"x": np.arange(5.0)}, devices=1)
        >>> p.length, p.tree["x"].shape
        (5, (5,))
    """
    mesh = batch_mesh(devices)
    n = batch_length(tree)
    extra = -n % mesh.size
    sharding = NamedSharding(mesh, PartitionSpec(BATCH_AXIS))
    placed = jax.tree.map(lambda x: put_global(_pad(x, extra), sharding), tree)
    return Placed(placed, n, mesh)


def place_replicated(tree: Any, mesh: Any) -> Any:
    """Every array leaf of `tree` copied to every device of `mesh` (other leaves unchanged)."""
    sharding = NamedSharding(mesh, PartitionSpec())

    def put(x):
        if isinstance(x, (jax.Array, np.ndarray)) or _is_key(x):
            return put_global(x, sharding)
        return x

    return jax.tree.map(put, tree)


def unpad(tree: Any, length: int, padded: int) -> Any:
    """Cut every leaf whose leading axis has the padded length back to `length`."""
    if length == padded:
        return tree

    def cut(x):
        return x[:length] if np.ndim(x) >= 1 and np.shape(x)[0] == padded else x

    return jax.tree.map(cut, tree)


def gather(tree: Any) -> Any:
    """Every leaf as a NumPy array holding the global value, on every process."""
    from jax.experimental import multihost_utils

    def get(x):
        if _is_key(x):
            x = jax.random.key_data(x)
        if isinstance(x, jax.Array) and not x.is_fully_addressable:
            return np.asarray(multihost_utils.process_allgather(x, tiled=True))
        return np.asarray(x)

    return jax.tree.map(get, tree)


def sharded_call(fn: Callable, batch: Any, *args: Any, devices: Any = None, **kwargs: Any) -> Any:
    """`fn(batch, *args, **kwargs)` with `batch` split over the devices.

    `fn` must treat the elements of `batch` independently along the leading axis (a
    `vmap`ped or per-element function) and return leaves whose leading axis is the batch;
    it is usually jitted. Array leaves of `args` are replicated on every device; `kwargs`
    pass through unchanged (static settings). The result is cut back to the batch length;
    it stays on the devices (use `gather` for NumPy).

    Args:
        fn: the batch function.
        batch: pytree of batched inputs.
        *args: further inputs, the same for every element (keys, shared parameters).
        devices: which devices.
        **kwargs: passed to `fn` as they are.

    Returns:
        `fn`'s output for the original batch length.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> f = jax.jit(jax.vmap(lambda x, c: x * c, in_axes=(0, None)))
        >>> sharded_call(f, jnp.arange(3.0), jnp.float32(2.0), devices=1).tolist()
        [0.0, 2.0, 4.0]
    """
    placed = place_batch(batch, devices)
    shared = place_replicated(args, placed.mesh)
    out = fn(placed.tree, *shared, **kwargs)
    padded = placed.length + (-placed.length % placed.mesh.size)
    return unpad(out, placed.length, padded)
