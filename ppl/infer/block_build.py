"""Gaussian blocks in `build_problem`: their families, the runtimes of the factors that read
their members, and the latent list with each block in place of its members."""

from __future__ import annotations

import dataclasses

from ppl.families import LogNormal
from ppl.graph import forms
from ppl.infer.block import BlockFamily, describe, layout_for


def gaussian_families(model, env, analysis, families: dict, shapes: dict, imputed=()):
    """({key: GaussianBlock} of the blocks that run, notes); adds each block's family. A
    `--gaussian-block all` block too large for one q runs as mean field, and a note says so; it
    leaves out what it could not run (`runnable_members`; `imputed`: the responses with empty
    cells)."""
    blocks, notes = {}, []
    for block in analysis.gaussian:
        block = runnable_members(block, model, analysis, imputed)
        if not block.members:
            continue
        placed = layout_for(block, model, env, analysis.scopes)
        if placed is None:
            notes.append(describe(block, None))
            continue
        layout, placements, _ = placed
        for name in block.logs(model):  # in the block as u = log τ: q(τ) is log-normal
            families[name] = LogNormal()
        families[block.key] = BlockFamily(block.key, layout, placements, {m: families[m] for m in block.members})
        shapes[block.key] = ()
        blocks[block.key] = block
    return blocks, notes


def runnable_members(block, model, analysis, imputed):
    """A `--gaussian-block all` block without what the block could not run, left in mean field: a
    Gamma read as the precision of a response in `imputed` (those cells' q would read τ from
    outside the block), the class weights of a softmax under a rule the block does not run or with
    empty outcomes, and then a Gamma that can no longer join. A block that names them is left as it
    is (E633, E381)."""
    if not block.automatic:
        return block
    from ppl.graph.gaussian_block import log_member_error
    from ppl.infer.factors.block_softmax import RULES
    from ppl.infer.factors.softmax import is_softmax
    logs = block.logs(model)
    drop = {t for t in logs for f in model.factors if f.target.name in imputed and _reads(f, t, model, "precision")}
    for f in filter(is_softmax, model.factors):
        rules = {t.rule for t in analysis.for_factor(f.name) if t.role != "value"} - {"vmp"}
        if f.target.name in imputed or not rules <= set(RULES):
            drop |= {m for m in block.members if m not in logs and _reads(f, m, model)}
    members = [m for m in block.members if m not in drop]
    members = [m for m in members if m not in logs or log_member_error(model, m, members) is None]
    return block if len(members) == len(block.members) else dataclasses.replace(block, members=tuple(members))


def _reads(factor, name: str, model, role: str | None = None) -> bool:
    """Whether `factor`'s arguments (its argument `role` alone, if given) read `name`."""
    args = factor.args if role is None else {role: factor.args[role]} if role in factor.args else {}
    return any(forms.reads(forms.inline(e, model.definitions), name) for e in args.values())


def block_read_by(factor, blocks: dict, model):
    """The block whose members `factor` draws or reads, or None (E381 for two blocks)."""
    found = [b for b in blocks.values()
             if factor.target.name in b.members or any(_reads(factor, m, model) for m in b.members)]
    if len(found) > 1:
        from ppl.infer.factors.block import refuse
        raise refuse(factor, "of two different blocks")
    return found[0] if found else None


def block_runtime(factor, model, env, dataset, families, block, rule):
    """The runtime of a factor that reads `block`: a Normal statement (conjugate), a scalar GLM
    likelihood under `rule` = (name, options), or a softmax under NC-VMP or Böhning's bound; E381 for
    anything else."""
    from ppl.infer.build import GLM_DISTRIBUTIONS
    from ppl.infer.factors.block import BlockGaussian, BlockGLM, refuse
    logs = block.logs(model)
    if factor.target.name in logs:
        from ppl.infer.factors.block_log import BlockLogGamma
        return BlockLogGamma(factor, model, env, dataset, families, block)
    if any(_reads(factor, n, model, "precision") for n in logs):
        from ppl.infer.factors.block_log import BlockLogNormal
        return BlockLogNormal(factor, model, env, dataset, families, block)
    if rule is not None and factor.dist.name in GLM_DISTRIBUTIONS and factor.target.name not in block.members:
        return BlockGLM(factor, model, env, dataset, families, rule[0], rule[1], block)
    from ppl.infer.factors.softmax import is_softmax
    if rule is not None and is_softmax(factor):
        from ppl.infer.factors.block_softmax import RULES, BlockSoftmax
        if rule[0] not in RULES:
            raise refuse(factor, f"through a softmax under `{rule[0]}`: a block runs a softmax under "
                         f"{' or '.join(f'`{r}`' for r in RULES)}, whose sites carry the curvature across the classes")
        return BlockSoftmax(factor, model, env, dataset, families, rule[0], rule[1], block)
    if rule is None and factor.dist.name in ("Normal", "MvNormal"):
        return BlockGaussian(factor, model, env, dataset, families, block)
    raise refuse(factor, f"through {factor.dist.name}: a block runs Normal and MvNormal statements and scalar GLM likelihoods")


def in_blocks(latent: list, blocks: dict) -> list:
    """`latent` with each block's key where its first member was, and its other members gone."""
    owner = {m: key for key, b in blocks.items() for m in b.members}
    out = []
    for name in latent:
        name = owner.get(name, name)
        if name not in out:
            out.append(name)
    return out
