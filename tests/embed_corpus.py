"""A small corpus for the embedding retrievers (shared by the tests and tools/embed_reference.py).

Four topics, three training rows each, one test row per topic; two input columns, so the
embedded text is ``question + " " + hint``.
"""

INPUT_COLUMNS = ["question", "hint"]

TRAIN = [
    {"question": "What do cats like to eat?", "hint": "pets", "answer": "fish"},
    {"question": "How fast can a cheetah run?", "hint": "wild animals", "answer": "very"},
    {"question": "Why do dogs bark at night?", "hint": "pets", "answer": "noise"},
    {"question": "Will it rain tomorrow in London?", "hint": "weather", "answer": "yes"},
    {"question": "What causes thunderstorms in summer?", "hint": "weather", "answer": "heat"},
    {"question": "How cold does Antarctica get in winter?", "hint": "climate", "answer": "-80"},
    {"question": "How long should pasta be boiled?", "hint": "cooking", "answer": "10 min"},
    {"question": "What spices go into a curry?", "hint": "cooking", "answer": "cumin"},
    {"question": "How do you bake sourdough bread?", "hint": "baking", "answer": "slowly"},
    {"question": "Who won the football world cup in 2014?", "hint": "sports", "answer": "Germany"},
    {"question": "How many players are on a basketball team?", "hint": "sports", "answer": "5"},
    {"question": "What is the length of a marathon?", "hint": "running", "answer": "42 km"},
]

TEST = [
    {"question": "Do kittens enjoy drinking milk?", "hint": "pets", "answer": "no"},
    {"question": "Is snow expected this weekend?", "hint": "weather", "answer": "maybe"},
    {"question": "How much salt goes into pasta water?", "hint": "cooking", "answer": "a lot"},
    {"question": "Which country hosts the next Olympic games?", "hint": "sports", "answer": "USA"},
]
