"""The synthetic user the experiments talk about, and the calendar of simulated days."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

START = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)

# A small synthetic user: one true value per attribute, the rest are what a guess gets wrong.
ATTRIBUTES: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("home", "Where does the user live?", "The user lives in {}.",
     ("Lisbon", "Oslo", "Toronto", "Nairobi", "Osaka", "Krakow")),
    ("job", "What does the user do for a living?", "The user works as a {}.",
     ("nurse", "carpenter", "data analyst", "teacher", "pilot", "chef")),
    ("pet", "What pet does the user have?", "The user has a pet {}.",
     ("dog", "cat", "parrot", "rabbit", "tortoise")),
    ("diet", "Does the user follow a particular diet?", "The user follows a {} diet.",
     ("vegetarian", "vegan", "gluten-free", "pescatarian", "keto")),
    ("sister", "What is the name of the user's sister?", "The user's sister is called {}.",
     ("Ana", "Maya", "Ingrid", "Chloe", "Priya")),
    ("sport", "Which sport does the user play?", "The user plays {} on weekends.",
     ("tennis", "football", "basketball", "volleyball", "squash")),
    ("language", "Which language is the user learning?", "The user is learning {}.",
     ("Japanese", "Spanish", "German", "Arabic", "Korean")),
    ("car", "What car does the user drive?", "The user drives a {}.",
     ("Volvo", "Toyota", "Tesla", "Fiat", "Skoda")),
    ("allergy", "What is the user allergic to?", "The user is allergic to {}.",
     ("peanuts", "penicillin", "cats", "pollen", "shellfish")),
    ("music", "What kind of music does the user like?", "The user loves {} music.",
     ("jazz", "techno", "classical", "folk", "reggae")),
    ("birthday", "When is the user's birthday?", "The user's birthday is in {}.",
     ("March", "July", "October", "January", "May")),
    ("partner", "What is the name of the user's partner?", "The user's partner is called {}.",
     ("Sam", "Jordan", "Alex", "Robin", "Kim")),
    ("hobby", "What is the user's hobby?", "The user's hobby is {}.",
     ("pottery", "birdwatching", "chess", "climbing", "baking")),
    ("editor", "Which code editor does the user use?", "The user writes code in {}.",
     ("Vim", "Emacs", "VS Code", "Helix")),
    ("team", "Which football club does the user support?", "The user supports {}.",
     ("Benfica", "Arsenal", "Ajax", "Napoli")),
    ("commute", "How does the user get to work?", "The user commutes to work by {}.",
     ("bike", "train", "bus", "car")),
)  # fmt: skip

FILLER = (
    "The user asked how to convert a CSV file to JSON.",
    "The user wanted a recipe for lentil soup.",
    "The user asked about the history of the printing press.",
    "The user needed help writing a cover letter.",
    "The user asked for a packing list for a weekend trip.",
    "The user compared two laptops for battery life.",
    "The user asked how compound interest works.",
    "The user wanted tips for keeping houseplants alive.",
    "The user asked for a summary of a podcast episode about sleep.",
    "The user planned a birthday dinner for a friend.",
    "The user asked how to fix a dripping tap.",
    "The user practised interview questions for a new role.",
)


def on_day(number: float, hour: int = 0) -> datetime:
    """Simulated time: `number` days and `hour` hours after the first session."""
    return START + timedelta(days=number, hours=hour)
