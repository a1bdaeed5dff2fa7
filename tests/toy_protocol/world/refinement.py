"""The toy's refinement mapping: the pages written and whether the scheduler accepted, per rank,
read off the model's state and off a toy run of the tree's code alike."""


def model_rank_view(protocol, rank) -> dict:
    return {"written": rank.written, "accepted": rank.accepted}


def model_view(protocol, state) -> dict:
    return {f"r{r}.{k}": v for r, rank in enumerate(state) for k, v in model_rank_view(protocol, rank).items()}


def code_view(protocol, run) -> dict:
    return {f"r{r.index}.{k}": v for r in run.ranks
            for k, v in (("written", r.operation.completed_pages), ("accepted", r.accepted))}
