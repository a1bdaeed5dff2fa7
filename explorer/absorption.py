"""The probability of ever reaching a target in a finite Markov chain given as a graph.

From state u the chain takes each of its `total[u]` steps with equal probability;
`edges[u]` lists (v, how many of those steps lead to v and are not themselves a
target), `hits[u]` how many of them are targets (a violating step). Target states
have probability 1, states without steps (absorbing) 0 unless they are targets. For
the rest, x[u] = (hits[u] + sum count * x[v]) / total[u], whose least solution is the
probability of ever reaching a target (a standard absorbing-chain argument: states
that cannot reach a target, among them every closed class without one, get 0).

It is solved one strongly connected component at a time, successors first (Tarjan's
order), so every value outside the component is final when it is solved. A component
of one state is solved in closed form; a larger one (a loop the chain may go round
several times) by Gauss-Seidel sweeps from 0, which rise monotonically to the least
solution, until a sweep changes no value by more than TOLERANCE.
"""

from __future__ import annotations

from dataclasses import dataclass

from prefetch_check.explorer.liveness import _components as strongly_connected_components

TOLERANCE = 1e-15
MAX_SWEEPS = 1_000_000


class NotConverged(ArithmeticError):
    pass


@dataclass
class Solution:
    values: list  # state -> probability of ever reaching a target
    components: int  # strongly connected components of more than one state
    largest: int  # states in the largest one
    sweeps: int  # Gauss-Seidel sweeps over all components


def reach_probability(total: list, edges: list, hits: list, target: bytearray) -> Solution:
    n = len(total)
    x = [0.0] * n
    member = bytearray([1]) * n

    def successors(u):
        if target[u]:
            return ()
        return [v for v, _ in edges[u]]

    components = largest = sweeps = 0
    for comp in strongly_connected_components(n, member, successors, lambda: None):
        if len(comp) == 1:
            u = comp[0]
            if target[u]:
                x[u] = 1.0
                continue
            if not total[u]:
                continue
            inside = 0
            acc = float(hits[u])
            for v, c in edges[u]:
                if v == u:
                    inside += c
                else:
                    acc += c * x[v]
            x[u] = acc / (total[u] - inside) if total[u] > inside else 0.0
            continue
        components += 1
        largest = max(largest, len(comp))
        sweeps += _gauss_seidel(comp, total, edges, hits, x)
    return Solution(x, components, largest, sweeps)


def _gauss_seidel(comp: list, total: list, edges: list, hits: list, x: list) -> int:
    """Solve one component (no target inside: a target has no way out, so it is alone)."""
    rows = []
    inside = set(comp)
    for u in comp:
        acc = float(hits[u])
        inner = []
        for v, c in edges[u]:
            if v in inside:
                inner.append((v, c))
            else:
                acc += c * x[v]
        rows.append((u, acc, inner, total[u]))
    if all(acc == 0.0 for _, acc, _, _ in rows):
        return 0  # no way to a target leaves this component: every value stays 0
    for sweep in range(1, MAX_SWEEPS + 1):
        change = 0.0
        for u, acc, inner, tot in rows:
            new = acc
            for v, c in inner:
                new += c * x[v]
            new /= tot
            if new - x[u] > change:
                change = new - x[u]
            x[u] = new
        if change <= TOLERANCE:
            return sweep
    raise NotConverged(f"a loop of {len(comp)} states did not converge in {MAX_SWEEPS} sweeps")
