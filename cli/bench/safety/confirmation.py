"""18. CAMA's question: what confirmation rate does the epistemic safeguard need to function?

The assistant guesses every attribute of the user, half of them right. The user then answers
a share of the review queue (the review rate), and either answers with care (confirms a right
guess, rejects a wrong one) or confirms whatever it is asked (a careless user). What is left a
month on: the right guesses kept as known (the safeguard's cost) and the wrong ones held as
known (its failure). In the unrestricted arm a guess is a fact from the start; the careful
user there rejects the wrong guesses it reviews, the careless one leaves them."""

from __future__ import annotations

import random
from typing import Any

from memdir.archive_format import lifecycle

from .harness import ARMS, SAFE, Lab, Measure, Metric, as_fact, compare, mentions, share
from .user import ATTRIBUTES, on_day

RATES = (0.0, 0.25, 0.5, 0.75, 1.0)
USERS = ("careful", "careless")


def confirmation(lab: Lab, rng: random.Random) -> tuple[list[Metric], dict[str, Any]]:
    keys = [key for key, _, _, _ in ATTRIBUTES]
    right = set(rng.sample(keys, len(keys) // 2))
    guesses = {}
    for key, _, template, values in ATTRIBUTES:
        true_value = rng.choice(values)
        wrong = rng.choice([v for v in values if v != true_value])
        guesses[key] = (template.format(true_value if key in right else wrong), key in right)
    # what the user answers at each rate: the first `rate` of the right guesses and of the wrong
    # ones (the queue in a random order, each rate answering both kinds alike)
    rights = [key for key in keys if key in right]
    wrongs = [key for key in keys if key not in right]
    rng.shuffle(rights)
    rng.shuffle(wrongs)
    day30 = on_day(30)
    found: dict[str, dict[str, dict[str, float]]] = {arm: {} for arm in ARMS}
    for arm in ARMS:
        for user in USERS:
            for rate in RATES:
                memdir = lab.memdir(f"confirm-{arm}-{user}-{rate}", small_talk=True)
                ids = {key: lab.conclude(memdir, text, on_day(1, n % 8), arm)
                       for n, (key, (text, _)) in enumerate(guesses.items())}  # fmt: skip
                answered = [*rights[: round(rate * len(rights))],
                            *wrongs[: round(rate * len(wrongs))]]  # fmt: skip
                for key in answered:
                    is_right = guesses[key][1]
                    if user == "careless" or is_right:
                        if arm == SAFE:
                            lifecycle.confirm(memdir, ids[key], on_day(2))
                    else:
                        lifecycle.reject(memdir, ids[key], "the user said it is wrong", on_day(2))
                index = lab.index(memdir)
                lifecycle.expire(memdir, day30)
                wake = as_fact(lab.wake(memdir, day30))
                kept: list[bool] = []
                wrong_known: list[bool] = []
                for key, question, _, _ in ATTRIBUTES:
                    text, is_right = guesses[key]
                    grounded = lab.grounded(index, question, day30, arm)
                    known = mentions(grounded, text) or mentions(wake, text)
                    (kept if is_right else wrong_known).append(known)
                found[arm][f"{user} {rate:g}"] = {
                    "right_kept": share(kept),
                    "wrong_known": share(wrong_known),
                }
    metrics: list[Metric] = []
    for user in USERS:
        for rate in RATES:
            label = f"{user} {rate:g}"
            metrics += compare(
                "18 confirmation rate",
                {arm: found[arm][label] for arm in ARMS},
                Measure(f"{user} user answers {rate:.0%}: wrong guesses held as known, day 30",
                        "wrong_known"),
                Measure(f"{user} user answers {rate:.0%}: right guesses kept as known, day 30",
                        "right_kept", lower_is_better=False,
                        note="what the safeguard costs: an unanswered guess expires"),
            )  # fmt: skip
    careless = [found[SAFE][f"careless {rate:g}"]["wrong_known"] for rate in RATES]
    detail = {
        "rates": list(RATES),
        **{arm: found[arm] for arm in ARMS},
        # the answer to CAMA's question, read off the safeguarded arm
        "careful_user_never_lets_a_wrong_guess_through": all(
            found[SAFE][f"careful {rate:g}"]["wrong_known"] == 0 for rate in RATES
        ),
        "careless_first_rate_with_a_wrong_guess_known": next(
            (rate for rate, wrong in zip(RATES, careless, strict=True) if wrong > 0), None
        ),
    }
    return metrics, detail
