"""A long generated work chat: questions, answers, pasted documents, tool calls and results.

Deterministic for a seed. The text is plausible enough for a summarizer that keeps names,
numbers and ids first: it is full of them, so planted facts compete with ordinary details.
"""

from __future__ import annotations

import json
import random

Step = tuple[str, str, str, bool]
"""A message to be: author, addressee, text, and whether it is a tool step."""

NAMES = ("Priya", "Tomás", "Wei", "Olu", "Marta", "Kenji", "Lea", "Farah", "Jonas", "Amara")
SURNAMES = ("Raman", "Okafor", "Lindqvist", "Moreau", "Tanaka", "Silva", "Novak", "Haddad")
SYSTEMS = (
    "billing",
    "search",
    "checkout",
    "the warehouse API",
    "staging",
    "the mobile app",
    "reporting",
    "the data pipeline",
)
THINGS = (
    "migration",
    "invoice run",
    "release",
    "rollback plan",
    "load test",
    "contract",
    "onboarding guide",
    "quarterly report",
    "incident review",
    "pricing page",
)
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
TEMPLATES = (
    "{name} says the {system} job failed {n} times since {day}.",
    "We could move the {thing} to {system}, but it would cost about {n} hours.",
    "I checked the logs and the error rate on {system} is {pct}% this week.",
    "Can you draft a short reply to {name} about the {thing}?",
    "The {thing} is blocked until {name} finishes the {system} review.",
    "Let us keep the {thing} as it is and look at it again on {day}.",
    "The estimate for the {thing} went from {n} to {m} hours after the last review.",
    "{name} wants the {thing} done before {day}, which looks tight but possible.",
    "There were {n} open tickets on {system} this morning and {m} of them are new.",
    "I would rather not touch {system} during the {thing}; it broke twice last month.",
    "The numbers in the {thing} do not add up: {n} in one table and {m} in the other.",
    "Thanks, that helps. I will tell {name} that the {thing} moves to {day}.",
)
TOOLS = ("search_tickets", "get_invoice", "list_deploys", "query_metrics")
CUES = (
    "booking code",
    "invoice number",
    "project lead",
    "budget in euros",
    "launch date",
    "meeting room",
    "account id",
    "backup contact",
)


def sentence(rng: random.Random) -> str:
    return rng.choice(TEMPLATES).format(
        name=rng.choice(NAMES),
        system=rng.choice(SYSTEMS),
        thing=rng.choice(THINGS),
        day=rng.choice(DAYS),
        n=rng.randint(2, 400),
        m=rng.randint(2, 400),
        pct=round(rng.uniform(0.1, 9.9), 1),
    )


def paragraph(rng: random.Random, low: int, high: int) -> str:
    return " ".join(sentence(rng) for _ in range(rng.randint(low, high)))


def _user(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.7:
        return paragraph(rng, 1, 3)
    if roll < 0.9:
        return paragraph(rng, 4, 8)
    pasted = "\n".join(paragraph(rng, 3, 6) for _ in range(rng.randint(5, 10)))
    return f"Here is the document I mentioned:\n{pasted}\nWhat do you make of it?"


def _answer(rng: random.Random) -> str:
    if rng.random() < 0.75:
        return paragraph(rng, 3, 10)
    return "\n\n".join(paragraph(rng, 3, 8) for _ in range(rng.randint(3, 6)))


def _tool_steps(rng: random.Random) -> list[tuple[str, str, str]]:
    """A tool call and its result, both the assistant's steps (its private messages), in the
    JSON the pydantic-ai hook records (`history.agent.steps`)."""
    tool = rng.choice(TOOLS)
    args = {"system": rng.choice(SYSTEMS), "since": f"2026-01-{rng.randint(1, 28):02d}"}
    rows = [
        {
            "id": f"T-{rng.randint(1000, 9999)}",
            "title": sentence(rng),
            "owner": rng.choice(NAMES),
            "hours": rng.randint(1, 80),
        }
        for _ in range(rng.randint(3, 30))
    ]
    call = f"call-{rng.randrange(16**8):08x}"
    return [
        ("assistant", "", json.dumps({"tool_calls": [{"id": call, "name": tool, "args": args}]})),
        (
            "assistant",
            "",
            json.dumps({"tool_returns": [{"id": call, "name": tool, "content": rows}]}),
        ),
    ]


def messages(count: int, rng: random.Random) -> list[Step]:
    """`count` messages: a question, sometimes tool steps, then an answer; repeated."""
    out: list[Step] = []
    while len(out) < count:
        out.append(("Ana", "assistant", _user(rng), False))
        while rng.random() < 0.3 and len(out) < count:
            out.extend((author, to, text, True) for author, to, text in _tool_steps(rng))
        out.append(("assistant", "Ana", _answer(rng), False))
    return out[:count]


def facts(rng: random.Random) -> list[tuple[str, str]]:
    """Eight facts as (cue, value), the values exact: codes, numbers, names and a date."""

    def letters(n: int) -> str:
        return "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(n))

    values = (
        f"{letters(2)}-{rng.randint(1000, 9999)}-{letters(2)}",
        f"INV-{rng.randint(10000, 99999)}",
        f"{rng.choice(NAMES)} {rng.choice(SURNAMES)}",
        f"{rng.randint(11, 99)},{rng.randint(100, 999)}",
        f"2027-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
        f"R{rng.randint(100, 999)}",
        f"ACC{rng.randint(100000, 999999)}",
        f"{rng.choice(SURNAMES)}, {rng.choice(NAMES)}",
    )
    return list(zip(CUES, values, strict=True))


PAUSES = (
    (0.55, 10, 90),
    (0.25, 120, 1_200),
    (0.12, 1_800, 8 * 3_600),
    (0.08, 86_400, 3 * 86_400),
)
"""How long a person takes before the next message after an answer: (share, seconds from, to).
A reply in the flow, a pause of minutes, one of hours, and one of days."""


def pause(rng: random.Random, *, human: bool, after_answer: bool) -> float:
    """Seconds before a message: a person's pause after an answer (`PAUSES`), or a burst of
    seconds (the agent answering, its tool calls, a person's next message in a row)."""
    if not human:
        return rng.uniform(2, 40)
    if not after_answer:
        return rng.uniform(5, 30)
    roll = rng.random()
    for share, low, high in PAUSES:
        if roll < share:
            return rng.uniform(low, high)
        roll -= share
    return rng.uniform(PAUSES[-1][1], PAUSES[-1][2])
