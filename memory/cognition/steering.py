"""Steering reward: what the person and the agent's own results say about a crystal, in [-1, 1].

Two signals move it, each a step of the reward toward its target (an exponential average, so
the latest signals count most and the reward never leaves [-1, 1]):

- feedback (``memory feedback ID useful|wrong|outdated``): useful steps 0.3 toward +1; wrong
  steps 0.5 toward -1 (a person saying it is wrong is strong evidence); outdated steps 0.3
  toward -1 (it was right once);
- a skill's recorded execution (``skills record``): 0.15 toward its reward on success, toward
  -1 on failure.

What it changes (the documented modulation):

- search ranks a crystal's score times ``1 + 0.3 s`` (0.7 for the worst, 1.3 for the best);
- consolidation rescales its importance by ``1 + 0.5 s``, so a crystal said to be wrong decays
  below the forget threshold sooner and a useful one stays longer (a stated importance and a pin
  still hold: see ``memory.dynamics.importance``).
"""

from __future__ import annotations

from memory.model import Crystal, Feedback
from memory.storage.row_writes import crystal_any
from memory.storage.store import MemoryStore

#: (target, step) of each kind of feedback.
FEEDBACK_STEPS: dict[Feedback, tuple[float, float]] = {
    Feedback.USEFUL: (1.0, 0.3),
    Feedback.WRONG: (-1.0, 0.5),
    Feedback.OUTDATED: (-1.0, 0.3),
}
OUTCOME_STEP = 0.15
# Search multiplies a hit's score by 1 + RANK_WEIGHT * steering_reward (``memory.retrieval.query``).
#: Consolidation multiplies importance by 1 + IMPORTANCE_WEIGHT * steering_reward.
IMPORTANCE_WEIGHT = 0.5


def stepped(current: float, target: float, step: float) -> float:
    """``current`` moved ``step`` of the way to ``target``, kept in [-1, 1]."""
    return max(-1.0, min(1.0, current + step * (target - current)))


async def _steer(store: MemoryStore, crystal_id: str, target: float, step: float, *, actor: str, what: str) -> Crystal:
    now = store.now_ms()
    async with store.transaction() as db:
        crystal = await crystal_any(db, crystal_id)
        after = stepped(crystal.steering_reward, target, step)
        await db.execute(
            "UPDATE crystals SET steering_reward = ?, updated_at_ms = ? WHERE id = ?", (after, now, crystal_id)
        )
        await db.execute(
            "INSERT INTO attributions (crystal_id, actor, action, ts_ms, detail) VALUES (?, ?, 'steered', ?, ?)",
            (crystal_id, actor, now, f"{what}: {crystal.steering_reward:.3f} -> {after:.3f}"),
        )
    return await crystal_any(store.reader(), crystal_id)


async def give_feedback(store: MemoryStore, crystal_id: str, feedback: Feedback, *, actor: str) -> Crystal:
    """Take the person's (or the agent's) word on a crystal; ``CrystalNotFound`` for an unknown id."""
    await store.get(crystal_id)  # expired or unknown: not found, as everywhere
    target, step = FEEDBACK_STEPS[feedback]
    return await _steer(store, crystal_id, target, step, actor=actor, what=f"feedback {feedback.value}")


async def record_outcome(store: MemoryStore, crystal_id: str, *, success: bool, reward: float, actor: str) -> Crystal:
    """A skill's execution: toward its reward (in [0, 1]) on success, toward -1 on failure."""
    target = reward if success else -1.0
    outcome = "succeeded" if success else "failed"
    return await _steer(store, crystal_id, target, OUTCOME_STEP, actor=actor, what=f"execution {outcome}")
