"""The three raw export formats PHANTOM accepts (docs/method.md#accepted-inputs) -- the contract
between `phantom_assets.simulate` (which writes them) and `phantom_assets.schema.ingest` (which
reads them).

One file = one batch. The reader detects the format from the file's *content*, not its suffix.

1. **whoclickedit flat table** (`.csv` or `.parquet`): one row per record with the columns
   `WHOCLICKEDIT_COLUMNS` (in that order). `ts` is epoch milliseconds (int) -- ISO-8601 strings are
   also accepted. `record_type` is `interaction` or `price_log`. `actor_type` is `human`/`agent`
   (empty when unknown), `is_agent` is `true`/`false` (empty when unknown). `metadata_*` columns are
   the flattened event metadata (empty when absent); `price` holds the quoted price on price-log
   rows. `kafka_*` columns record where the row came from in Kafka (may be empty).

2. **Kafka console export** (`.json`): a JSON *array* of envelopes
   `{"partitionID": int, "offset": int, "timestamp": <ms>, "key": str|null,
     "value": {"payload": {<flat event payload>}}}`. The topic is `KAFKA_INTERACTIONS_TOPIC` or
   `KAFKA_PRICE_TOPIC`; a file holds one topic and names it in the file name
   (`<anything>.<topic>.json`). Price-log payloads have `eventName == "price_quote"` and a `price`.

3. **JSON Lines** (`.jsonl`): one flat event payload per line (`PAYLOAD_FIELDS`); `metadata` is a
   nested object. Labels come from an optional sidecar CSV beside it named
   `<stem>.experiments.csv` (else `experiments.csv` in the same folder) with
   `EXPERIMENT_COLUMNS`; `xp_human_only = true` labels the experiment's sessions human, `false`
   agent. A Kafka export uses the same sidecar rule.

Flat event payload (Kafka `value.payload` and JSON Lines rows): `sessionId, experimentId,
storeMode, ts (epoch ms), page, eventName, productId, metadata {..}, userAgent`, plus `price` on
price logs. Label precedence in the canonical event: experiment sidecar > actor column > none.

Edges every format shares: text files are UTF-8, or UTF-8/UTF-16/UTF-32 with a byte-order mark.
Payload fields and the known `METADATA_KEYS` hold single values (an array or object quarantines
the record as `non_scalar_value`); other metadata keys (or `metadata_<key>` columns) are kept in
the canonical `metadata` JSON. A record without `ts` takes its Kafka record timestamp (envelope
`timestamp`, or the table's `kafka_timestamp`), and the canonical `ts_source` says so.
"""

from __future__ import annotations

from typing import Final

METADATA_KEYS: Final[tuple[str, ...]] = (
    "cabinClass",
    "dateIndex",
    "dwellTime",
    "elementText",
    "fareRule",
    "flightType",
    "itemCount",
    "nights",
    "price",
    "referrer",
    "roomType",
    "total",
    "type",
)
KAFKA_COLUMNS: Final[tuple[str, ...]] = (
    "kafka_topic",
    "kafka_partition",
    "kafka_offset",
    "kafka_timestamp",
    "kafka_key",
)
WHOCLICKEDIT_COLUMNS: Final[tuple[str, ...]] = (
    "actor_type",
    "is_agent",
    "record_type",
    "topic",
    "source_session_dir",
    "source_file",
    "source_row_index",
    "ingest_format",
    "sessionId",
    "experimentId",
    "storeMode",
    "ts",
    "eventName",
    "page",
    "productId",
    "price",
    "userAgent",
    *KAFKA_COLUMNS,
    *(f"metadata_{key}" for key in METADATA_KEYS),
)
PAYLOAD_FIELDS: Final[tuple[str, ...]] = (
    "sessionId",
    "experimentId",
    "storeMode",
    "ts",
    "page",
    "eventName",
    "productId",
    "metadata",
    "userAgent",
    "price",
)
EXPERIMENT_COLUMNS: Final[tuple[str, ...]] = (
    "experimentId",
    "xp_human_only",
    "xp_market_mode",
    "xp_task_id",
    "subject_name",
)
KAFKA_INTERACTIONS_TOPIC: Final[str] = "user-interactions"
KAFKA_PRICE_TOPIC: Final[str] = "price-logs"
EXPERIMENTS_SIDECAR_NAME: Final[str] = "experiments.csv"
EXPERIMENTS_SIDECAR_SUFFIX: Final[str] = ".experiments.csv"
