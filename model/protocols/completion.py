"""What every SGLang prefetch protocol does with its completion predicate: resolve it from a
name or a function, show it an operation as an `OperationView`, memoise its answer (a
predicate must be a pure function) and spell out an evaluation for the traces."""

from __future__ import annotations

from prefetch_check.model.predicate_loader import load_predicate
from prefetch_check.model.protocols.poll.predicates import OperationView


class CompletionPredicate:
    """Mixed in before `RankProtocol`; the protocol's operations carry `hash_value` (pages
    published), `completed` (pages loaded), `terminated` and `timed_out`."""

    def use_predicate(self, config, predicate, name: str | None, builtin: dict | None = None) -> None:
        """Take `predicate` (a name, a function or (name, function) as a loader gives it);
        `builtin` names the protocol's own predicates (default: the predicate-poll protocol's)."""
        if isinstance(predicate, tuple):
            name, predicate = predicate
        if isinstance(predicate, str):
            name, predicate = load_predicate(predicate, builtin)
        self.predicate = predicate
        self.predicate_name = name or getattr(predicate, "__name__", "predicate")
        self._decisions: dict = {}
        self._hashes = tuple(tuple(f"h{i}" for i in range(n)) for n in range(max(q.pages for q in config.requests) + 1))

    def view_of(self, op) -> OperationView:
        return OperationView(
            hash_value=self._hashes[op.hash_value],
            completed_tokens=op.completed * self.config.page_size,
            page_size=self.config.page_size,
            terminated=op.terminated,
            policy=self.config.policy,
            timed_out=op.timed_out,
        )

    def decide_op(self, op) -> bool:
        """The predicate's local answer (memoised: a predicate must be a pure function)."""
        key = (op.hash_value, op.completed, op.terminated, op.timed_out)
        known = self._decisions.get(key)
        if known is None:
            known = self._decisions[key] = bool(self.predicate(self.view_of(op)))
        return known

    def explain_predicate(self, op) -> str:
        """The predicate's evaluation spelled out: inputs, comparison, answer."""
        view, answer = self.view_of(op), self.decide_op(op)
        explain = getattr(self.predicate, "explain", None)
        if explain is not None:
            return explain(view, answer)
        return (
            f"{self.predicate_name}(len(hash_value)={len(view.hash_value)}, "
            f"completed_tokens={view.completed_tokens}, terminated={view.terminated}, "
            f"timed_out={view.timed_out}) -> {'accept' if answer else 'wait'}"
        )
