"""Generate the bundled demo data in the exact upstream schemas (deterministic; rerun to reproduce).

``python -m xlt.assets.make_demo`` rewrites ``xlt/assets/demo/``:

* ``race/{train,validation}.jsonl``            RACE (``ehovy/race``) schema
* ``sciq/{train,validation}.jsonl``            SciQ (``allenai/sciq``) schema
* ``belebele/data/<flores>.jsonl``             Belebele (``facebook/belebele``) schema, 6 languages
* ``global_mmlu/<lang>/{test,dev}-00000-of-00001.parquet``  Global-MMLU schema, 6 languages

The task is a learnable "find it in the text" reading task: a short passage mentions one item of the
asked category (what was bought, where someone went, which animal was seen); the three distractors are
items of the same category that the passage does not mention. Items of *other* categories do appear in
the passage, so a model must match the option against the passage, not just spot any passage word.
The content is parallel across languages (same ids, same answers), rendered from small hand-written
templates in English, French, German, Russian, Chinese and Arabic.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pandas as pd

OUT = Path(__file__).resolve().parent / "demo"

LANGS = {"en": "eng_Latn", "fr": "fra_Latn", "de": "deu_Latn", "ru": "rus_Cyrl", "zh": "zho_Hans", "ar": "arb_Arab"}

# category -> language -> items (parallel lists)
ITEMS = {
    "fruit": {
        "en": ["apples", "bananas", "cherries", "grapes", "lemons", "mangoes", "oranges", "pears", "plums", "melons", "peaches", "figs"],
        "fr": ["des pommes", "des bananes", "des cerises", "du raisin", "des citrons", "des mangues", "des oranges", "des poires", "des prunes", "des melons", "des pêches", "des figues"],
        "de": ["Äpfel", "Bananen", "Kirschen", "Trauben", "Zitronen", "Mangos", "Orangen", "Birnen", "Pflaumen", "Melonen", "Pfirsiche", "Feigen"],
        "ru": ["яблоки", "бананы", "вишни", "виноград", "лимоны", "манго", "апельсины", "груши", "сливы", "дыни", "персики", "инжир"],
        "zh": ["苹果", "香蕉", "樱桃", "葡萄", "柠檬", "芒果", "橙子", "梨", "李子", "甜瓜", "桃子", "无花果"],
        "ar": ["تفاحا", "موزا", "كرزا", "عنبا", "ليمونا", "مانجو", "برتقالا", "كمثرى", "برقوقا", "بطيخا", "خوخا", "تينا"],
    },
    "place": {
        "en": ["the market", "the library", "the beach", "the station", "the museum", "the park", "the school", "the bakery", "the hospital", "the harbour"],
        "fr": ["au marché", "à la bibliothèque", "à la plage", "à la gare", "au musée", "au parc", "à l'école", "à la boulangerie", "à l'hôpital", "au port"],
        "de": ["zum Markt", "zur Bibliothek", "zum Strand", "zum Bahnhof", "zum Museum", "zum Park", "zur Schule", "zur Bäckerei", "zum Krankenhaus", "zum Hafen"],
        "ru": ["на рынок", "в библиотеку", "на пляж", "на вокзал", "в музей", "в парк", "в школу", "в пекарню", "в больницу", "в порт"],
        "zh": ["市场", "图书馆", "海滩", "车站", "博物馆", "公园", "学校", "面包店", "医院", "港口"],
        "ar": ["السوق", "المكتبة", "الشاطئ", "المحطة", "المتحف", "الحديقة", "المدرسة", "المخبز", "المستشفى", "الميناء"],
    },
    "animal": {
        "en": ["a fox", "a horse", "a rabbit", "an owl", "a deer", "a goat", "a swan", "a wolf", "a bear", "a cat"],
        "fr": ["un renard", "un cheval", "un lapin", "un hibou", "un cerf", "une chèvre", "un cygne", "un loup", "un ours", "un chat"],
        "de": ["einen Fuchs", "ein Pferd", "einen Hasen", "eine Eule", "einen Hirsch", "eine Ziege", "einen Schwan", "einen Wolf", "einen Bären", "eine Katze"],
        "ru": ["лису", "лошадь", "кролика", "сову", "оленя", "козу", "лебедя", "волка", "медведя", "кошку"],
        "zh": ["狐狸", "马", "兔子", "猫头鹰", "鹿", "山羊", "天鹅", "狼", "熊", "猫"],
        "ar": ["ثعلبا", "حصانا", "أرنبا", "بومة", "غزالا", "ماعزا", "بجعة", "ذئبا", "دبا", "قطة"],
    },
}

NAMES = {
    "en": ["Anna", "Omar", "Lena", "Ivan", "Mei", "Samir", "Clara", "Pavel"],
    "fr": ["Anna", "Omar", "Léna", "Ivan", "Mei", "Samir", "Clara", "Pavel"],
    "de": ["Anna", "Omar", "Lena", "Iwan", "Mei", "Samir", "Clara", "Pawel"],
    "ru": ["Анна", "Омар", "Лена", "Иван", "Мэй", "Самир", "Клара", "Павел"],
    "zh": ["安娜", "奥马尔", "莉娜", "伊万", "梅", "萨米尔", "克拉拉", "帕维尔"],
    "ar": ["آنا", "عمر", "لينا", "إيفان", "مي", "سمير", "كلارا", "بافل"],
}

# Sentences per category (what the passage says) and questions (what is asked), per language.
SAY = {
    "en": {"place": "{n} went to {x} in the morning.", "fruit": "At noon {n} bought {x}.", "animal": "In the evening {n} saw {x}."},
    "fr": {"place": "Le matin, {n} est allé {x}.", "fruit": "À midi, {n} a acheté {x}.", "animal": "Le soir, {n} a vu {x}."},
    "de": {"place": "Am Morgen ging {n} {x}.", "fruit": "Am Mittag kaufte {n} {x}.", "animal": "Am Abend sah {n} {x}."},
    "ru": {"place": "Утром {n} пошёл {x}.", "fruit": "В полдень {n} купил {x}.", "animal": "Вечером {n} увидел {x}."},
    "zh": {"place": "{n}早上去了{x}。", "fruit": "{n}中午买了{x}。", "animal": "{n}晚上看见了{x}。"},
    "ar": {"place": "ذهب {n} إلى {x} في الصباح.", "fruit": "اشترى {n} {x} عند الظهر.", "animal": "رأى {n} {x} في المساء."},
}
ASK = {
    "en": {"place": "Where did {n} go in the morning?", "fruit": "What did {n} buy at noon?", "animal": "What did {n} see in the evening?"},
    "fr": {"place": "Où {n} est-il allé le matin ?", "fruit": "Qu'est-ce que {n} a acheté à midi ?", "animal": "Qu'est-ce que {n} a vu le soir ?"},
    "de": {"place": "Wohin ging {n} am Morgen?", "fruit": "Was kaufte {n} am Mittag?", "animal": "Was sah {n} am Abend?"},
    "ru": {"place": "Куда {n} пошёл утром?", "fruit": "Что {n} купил в полдень?", "animal": "Кого {n} увидел вечером?"},
    "zh": {"place": "{n}早上去了哪里？", "fruit": "{n}中午买了什么？", "animal": "{n}晚上看见了什么？"},
    "ar": {"place": "إلى أين ذهب {n} في الصباح؟", "fruit": "ماذا اشترى {n} عند الظهر؟", "animal": "ماذا رأى {n} في المساء؟"},
}
CATS = ("place", "fruit", "animal")


def make_item(rng: random.Random, base: dict | None = None) -> dict:
    """One language-neutral question: a name, the passage's items per category, the asked category, options.

    With ``base``, the question is a second one on the same passage, asking about another category.
    """
    if base is None:
        name = rng.randrange(len(NAMES["en"]))
        cats = list(CATS)
        rng.shuffle(cats)
        shown = {c: rng.randrange(len(ITEMS[c]["en"])) for c in cats}
        asked = rng.choice(cats)
    else:
        name, cats, shown = base["name"], base["order"], base["shown"]
        asked = rng.choice([c for c in CATS if c != base["asked"]])
    others = [i for i in range(len(ITEMS[asked]["en"])) if i != shown[asked]]
    options = [shown[asked], *rng.sample(others, 3)]
    rng.shuffle(options)
    return {"name": name, "order": cats, "shown": shown, "asked": asked, "options": options, "label": options.index(shown[asked])}


def render(item: dict, lang: str) -> tuple[str, str, list[str]]:
    n = NAMES[lang][item["name"]]
    sep = "" if lang == "zh" else " "
    passage = sep.join(SAY[lang][c].format(n=n, x=ITEMS[c][lang][item["shown"][c]]) for c in item["order"])
    question = ASK[lang][item["asked"]].format(n=n)
    options = [ITEMS[item["asked"]][lang][i] for i in item["options"]]
    return passage, question, options


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def make_items(rng: random.Random, n: int) -> list[dict]:
    """``n`` questions, two per passage (like RACE and Belebele)."""
    items: list[dict] = []
    while len(items) < n:
        items.append(make_item(rng) if len(items) % 2 == 0 else make_item(rng, items[-1]))
    return items


def race_rows(rng: random.Random, n: int, split: str) -> list[dict]:
    rows = []
    for i, item in enumerate(make_items(rng, n)):
        passage, question, options = render(item, "en")
        rows.append({"example_id": f"demo-{split}{i // 2}.txt", "article": passage, "answer": "ABCD"[item["label"]],
                     "question": question, "options": options})
    return rows


def sciq_rows(rng: random.Random, n: int) -> list[dict]:
    rows = []
    for _ in range(n):
        item = make_item(rng)
        passage, question, options = render(item, "en")
        correct = options[item["label"]]
        distractors = [o for o in options if o != correct]
        rows.append({"question": question, "distractor3": distractors[2], "distractor1": distractors[0],
                     "distractor2": distractors[1], "correct_answer": correct, "support": passage})
    return rows


SUBJECTS = [("global_facts", "Other"), ("miscellaneous", "Other"), ("high_school_geography", "Social Sciences"),
            ("world_religions", "Humanities")]


def gmmlu_rows(items: list[dict], lang: str, split: str) -> list[dict]:
    rows = []
    for i, item in enumerate(items):
        passage, question, options = render(item, lang)
        subject, category = SUBJECTS[i % len(SUBJECTS)]
        annotated = split == "test" and i % 3 != 2
        label = ("CS" if i % 2 == 0 else "CA") if annotated else "-"

        def ann(v: str, annotated: bool = annotated) -> str:
            return str([v, v]) if annotated else "[]"  # two annotators, written as a Python list string
        rows.append({
            "sample_id": f"{subject}/{split}/{i}", "subject": subject, "subject_category": category,
            "question": f"{passage} {question}".strip(), "option_a": options[0], "option_b": options[1],
            "option_c": options[2], "option_d": options[3], "answer": "ABCD"[item["label"]],
            "required_knowledge": ann("cultural"), "time_sensitive": ann("No"), "reference": ann("-"),
            "culture": ann("Western Culture") if label == "CS" else "[]", "region": ann("North America") if label == "CS" else "[]",
            "country": ann("United States of America") if label == "CS" else "[]",
            "cultural_sensitivity_label": label, "is_annotated": annotated,
        })
    return rows


def main() -> None:
    rng = random.Random(20260101)
    _write_jsonl(OUT / "race" / "train.jsonl", race_rows(rng, 1600, "train"))
    _write_jsonl(OUT / "race" / "validation.jsonl", race_rows(rng, 120, "dev"))
    _write_jsonl(OUT / "sciq" / "train.jsonl", sciq_rows(rng, 800))
    _write_jsonl(OUT / "sciq" / "validation.jsonl", sciq_rows(rng, 80))
    bele = make_items(rng, 120)
    mmlu_test = [make_item(rng) for _ in range(80)]
    mmlu_dev = [make_item(rng) for _ in range(len(SUBJECTS) * 5)]
    for lang, code in LANGS.items():
        rows = []
        for i, item in enumerate(bele):
            passage, question, options = render(item, lang)
            rows.append({"link": f"https://demo.xlt/wiki/{i // 2}", "question_number": i % 2 + 1, "flores_passage": passage,
                         "question": question, "mc_answer1": options[0], "mc_answer2": options[1],
                         "mc_answer3": options[2], "mc_answer4": options[3],
                         "correct_answer_num": str(item["label"] + 1), "dialect": code, "ds": "2023-05-03"})
        _write_jsonl(OUT / "belebele" / "data" / f"{code}.jsonl", rows)
        for split, items in (("test", mmlu_test), ("dev", mmlu_dev)):
            path = OUT / "global_mmlu" / lang / f"{split}-00000-of-00001.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            pd.DataFrame(gmmlu_rows(items, lang, split)).to_parquet(path, index=False)


if __name__ == "__main__":
    main()
