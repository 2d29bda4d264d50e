"""The outbox's schema as forward migrations: `MIGRATIONS[N]` brings a file from
`user_version` N to N + 1, and `SCHEMA_VERSION` is where a new file ends. Times are UTC
seconds since the epoch (REAL) so that windows are plain arithmetic; `datetime(x,
'unixepoch')` reads them in the sqlite3 shell; rows are never deleted.

A change of the schema is a new migration at the end (never an edit of one a kiosk may have
run) and a new snapshot in tests/ledger/schema_snapshot.sql (tests/ledger/test_schema.py).
"""

from __future__ import annotations

from typing import Final

#: migration N brings the schema from user_version N to N + 1
MIGRATIONS: Final[tuple[str, ...]] = (
    """
    CREATE TABLE charge_intent (
        id              INTEGER PRIMARY KEY,
        idem_key        TEXT    NOT NULL UNIQUE,
        -- the exact token while it may still be sent; cleared once the intent is final
        token           TEXT,
        token_sha256    TEXT    NOT NULL,
        token_tail      TEXT    NOT NULL,
        amount_mnt      INTEGER NOT NULL CHECK (amount_mnt > 0),
        state           TEXT    NOT NULL,
        -- 1 charged, 0 not charged, NULL not (yet) known
        charged         INTEGER,
        created_at      REAL    NOT NULL,
        first_sent_at   REAL,
        last_sent_at    REAL,
        last_end_at     REAL,
        attempts        INTEGER NOT NULL DEFAULT 0,
        -- 1 while a request is (or may be) in flight: a crash leaves it set
        in_flight       INTEGER NOT NULL DEFAULT 0,
        -- 1 once any attempt may have reached the service without a clear answer
        maybe_sent      INTEGER NOT NULL DEFAULT 0,
        -- 0 once re-sending stopped (409 after an unclear attempt, horizon, abandon)
        may_resend      INTEGER NOT NULL DEFAULT 1,
        next_try_at     REAL,
        clock_skew_s    REAL,
        last_status     INTEGER,
        last_detail     TEXT,
        decline_code    TEXT,
        -- the state to end in when the history shows nothing (declined/refused/not_charged)
        if_absent       TEXT,
        lookups         INTEGER NOT NULL DEFAULT 0,
        last_lookup_at  REAL,
        tx_id           TEXT UNIQUE,
        tx_json         TEXT,
        -- 1 while an abandoned intent's history is still being watched
        watching        INTEGER NOT NULL DEFAULT 0,
        resolved_at     REAL
    );
    CREATE INDEX charge_intent_state ON charge_intent (state);
    CREATE TABLE attempt (
        id          INTEGER PRIMARY KEY,
        intent_id   INTEGER,
        reversal_id INTEGER,
        kind        TEXT NOT NULL,          -- charge | lookup | reverse
        n           INTEGER NOT NULL,
        sent_at     REAL NOT NULL,
        elapsed_s   REAL,
        status      INTEGER,
        outcome     TEXT NOT NULL,
        detail      TEXT,
        server_date REAL
    );
    CREATE INDEX attempt_intent ON attempt (intent_id);
    CREATE TABLE reversal (
        id          INTEGER PRIMARY KEY,
        tx_id       TEXT NOT NULL,
        intent_id   INTEGER,
        amount_mnt  INTEGER,
        reason      TEXT NOT NULL,          -- manual | abandoned
        state       TEXT NOT NULL,
        created_at  REAL NOT NULL,
        attempts    INTEGER NOT NULL DEFAULT 0,
        next_try_at REAL,
        last_status INTEGER,
        message     TEXT,
        resolved_at REAL
    );
    CREATE INDEX reversal_tx ON reversal (tx_id);
    """,
    # 2: the claims model (ledger/claims.py): measured server clock, reviews, foreign rows
    """
    -- end of the last request that got no clear answer (none, timeout, 5xx): late commits
    -- of that request are waited for from here
    ALTER TABLE charge_intent ADD COLUMN last_unclear_end_at REAL;
    -- how the intent's transaction was proven: reply | history | review
    ALTER TABLE charge_intent ADD COLUMN proof TEXT;
    -- a look-up reads the intents near its window, and every unsettled one
    CREATE INDEX charge_intent_created ON charge_intent (created_at);
    CREATE INDEX charge_intent_charged ON charge_intent (charged);
    -- the server's clock as last measured from a response's Date (one row)
    CREATE TABLE server_clock (
        id           INTEGER PRIMARY KEY CHECK (id = 1),
        offset_s     REAL,              -- server − local, seconds; NULL: never measured
        measured_at  REAL,              -- local time of the measurement
        -- local time since which every measurement agreed with this offset (a jump resets it)
        stable_since REAL,
        -- 1 when stable_since was set by a jump (an earlier measurement disagreed)
        jumped       INTEGER NOT NULL DEFAULT 0,
        previous_s   REAL,              -- the offset before the last jump
        previous_since REAL,            -- since when that one had held
        terminal_id  TEXT               -- this terminal's ter_ id, once a verified reply showed it
    );
    -- an intent a person must settle, with the rows that could be its charge
    CREATE TABLE review (
        intent_id   INTEGER PRIMARY KEY,
        reason      TEXT NOT NULL,
        candidates  TEXT NOT NULL,      -- JSON [{"transaction": wire, "others": [ids]}]
        opened_at   REAL NOT NULL,
        decided_at  REAL,
        decision    TEXT,               -- charged | refund | not_charged
        decided_tx  TEXT,
        decided_by  TEXT
    );
    -- history rows no intent of this outbox could have sent: another install's charges
    CREATE TABLE foreign_row (
        tx_id       TEXT PRIMARY KEY,
        amount_mnt  INTEGER NOT NULL,
        created_at  TEXT NOT NULL,
        seen_at     REAL NOT NULL,
        intent_id   INTEGER,            -- the look-up that saw it
        cleared_at  REAL                -- an owner cleared the warning
    );
    """,
    # 3: every offset this intent's own exchanges measured (its window spans them all)
    """
    ALTER TABLE charge_intent ADD COLUMN skew_lo_s REAL;
    ALTER TABLE charge_intent ADD COLUMN skew_hi_s REAL;
    UPDATE charge_intent SET skew_lo_s = clock_skew_s, skew_hi_s = clock_skew_s;
    -- look-ups the service answered: each allows one more send with the same key
    ALTER TABLE charge_intent ADD COLUMN answered_lookups INTEGER NOT NULL DEFAULT 0;
    -- the highest offset the service's stamps may still be catching up with (states.next_reading)
    ALTER TABLE server_clock ADD COLUMN high_s REAL;
    ALTER TABLE server_clock ADD COLUMN high_at REAL;
    """,
    # 4: a new charge asks whether its token has already paid for a sale of this outbox
    """
    CREATE INDEX charge_intent_token ON charge_intent (token_sha256);
    """,
    # 5: when the last unclear request ended on a clock that NTP cannot step (this boot's
    # id and its CLOCK_BOOTTIME): late commits are waited for in real seconds
    """
    ALTER TABLE charge_intent ADD COLUMN unclear_end_boot TEXT;
    ALTER TABLE charge_intent ADD COLUMN unclear_end_up REAL;
    """,
    # 6: a cleared warning vouches only for rows committed after it: up to this moment of
    # the service's clock a row may still be the other install's (older clears: their
    # local time, the best there is); and a history match waits for one more same-key send
    """
    ALTER TABLE foreign_row ADD COLUMN suspect_until REAL;
    UPDATE foreign_row SET suspect_until = cleared_at WHERE cleared_at IS NOT NULL;
    -- a unique history match is confirmed by one more send of the key when it may be sent
    ALTER TABLE charge_intent ADD COLUMN matched_at REAL;
    """,
    # 7: a row left over only because some intent could own one of several rows is a
    # surplus: it raises the warning but stays a candidate (it may be this kiosk's own)
    """
    ALTER TABLE foreign_row ADD COLUMN surplus INTEGER NOT NULL DEFAULT 0;
    """,
    # 8: time for money in real seconds, and identity that follows the pairing
    """
    -- the first send's step-proof stamp (boot id, CLOCK_BOOTTIME): the resend horizon and
    -- the absence ceiling count real seconds from it (ledger/timing.py)
    ALTER TABLE charge_intent ADD COLUMN first_sent_boot TEXT;
    ALTER TABLE charge_intent ADD COLUMN first_sent_up REAL;
    -- the pairing (terminal username) the sale was sent under: a new pairing is a new
    -- terminal, whose key space and history the sale is not in
    ALTER TABLE charge_intent ADD COLUMN username TEXT;
    -- the username the learned terminal id belongs to (NULL: learned before this was kept)
    ALTER TABLE server_clock ADD COLUMN terminal_user TEXT;
    -- the latest the service's clock was ever seen at, on its own clock (a kiosk's clock
    -- stepped by NTP cannot move it): commits are stamped no earlier until it is passed
    ALTER TABLE server_clock ADD COLUMN high_date REAL;
    -- abandon no longer ends a review: a sale abandoned from review (its charge possibly
    -- real, owned by nothing, never refunded) is back in the review list
    UPDATE charge_intent SET state = 'needs_review'
     WHERE state = 'abandoned' AND watching = 0 AND charged IS NULL AND maybe_sent = 1;
    """,
    """
    -- a sale's and a refund's last word for a person, as `qrpos.said` keeps it (a JSON
    -- key, fields and English): shown in the configured language; the English columns
    -- beside them stay for logs, --json and older readers
    ALTER TABLE charge_intent ADD COLUMN detail_said TEXT;
    ALTER TABLE reversal ADD COLUMN message_said TEXT;
    """,
    # 10: the receipt printer's queue: a slip is kept until the printer took it whole, so a
    # printer that is off, out of paper or unplugged never loses one (nor blocks a sale)
    """
    CREATE TABLE print_job (
        id          INTEGER PRIMARY KEY,
        created_at  REAL NOT NULL,             -- UTC seconds, for people
        kind        TEXT NOT NULL,             -- sale | refund | end_of_day | test
        ref         TEXT NOT NULL,             -- the transaction id, the day
        reprint     INTEGER NOT NULL DEFAULT 0,
        slip        TEXT NOT NULL,             -- its lines (JSON), frozen when queued
        state       TEXT NOT NULL DEFAULT 'queued'
                    CHECK (state IN ('queued', 'printed', 'dropped')),
        tries       INTEGER NOT NULL DEFAULT 0,
        last_error  TEXT,                      -- why the last try failed (Said JSON)
        printed_at  REAL
    );
    CREATE INDEX print_job_queued ON print_job (state, id);
    -- a sale's own slip once: an approval told twice (a retry, a restart) queues no second
    CREATE UNIQUE INDEX print_job_slip_once ON print_job (kind, ref) WHERE reprint = 0;
    """,
    # 11: cashiers and their shifts: every sale and refund is stamped with the shift open
    # when it was written; a shift's Z report is frozen when it closes and never changes
    """
    CREATE TABLE cashier (
        id          INTEGER PRIMARY KEY,
        name        TEXT NOT NULL,
        pin         TEXT NOT NULL,             -- scrypt$n$r$p$salt$hash, never the PIN
        active      INTEGER NOT NULL DEFAULT 1,
        created_at  REAL NOT NULL
    );
    CREATE UNIQUE INDEX cashier_name ON cashier (name) WHERE active = 1;
    CREATE TABLE shift (
        id          INTEGER PRIMARY KEY,
        cashier_id  INTEGER NOT NULL REFERENCES cashier (id),
        opened_at   REAL NOT NULL,             -- UTC seconds: for people, the history's window
        closed_at   REAL,
        closed_by   TEXT CHECK (closed_by IN ('cashier', 'manager')),
        z_number    INTEGER UNIQUE,
        z_report    TEXT                       -- the Z as it was taken (JSON)
    );
    -- one shift open at a time on a till
    CREATE UNIQUE INDEX shift_one_open ON shift ((closed_at IS NULL)) WHERE closed_at IS NULL;
    -- a Z, once taken, never changes: a late outcome is a correction on the next one
    CREATE TRIGGER shift_z_frozen BEFORE UPDATE ON shift WHEN OLD.z_report IS NOT NULL
    BEGIN
        SELECT RAISE(ABORT, 'a Z report never changes');
    END;
    CREATE TRIGGER shift_z_kept BEFORE DELETE ON shift WHEN OLD.z_report IS NOT NULL
    BEGIN
        SELECT RAISE(ABORT, 'a Z report is kept');
    END;
    ALTER TABLE charge_intent ADD COLUMN shift_id INTEGER;
    ALTER TABLE reversal ADD COLUMN shift_id INTEGER;
    """,
    # 12: the server clock's reading keeps its stamps on the boot clock too, with the wall
    # clock's frame (wall − boot clock) they were measured in: after NTP stepped the wall
    # clock, a sale's window is placed with offsets moved into its own frame, never widened
    # by the step (a window hours wide let an open sale "explain" another's rows)
    """
    ALTER TABLE server_clock ADD COLUMN boot TEXT;
    ALTER TABLE server_clock ADD COLUMN frame_s REAL;
    ALTER TABLE server_clock ADD COLUMN stable_up REAL;
    ALTER TABLE server_clock ADD COLUMN previous_up REAL;
    ALTER TABLE server_clock ADD COLUMN previous_frame_s REAL;
    -- the highest mark the service's clock was seen to fall behind (its own clock): only
    -- then are commits stamped ahead of its clock, and only up to that mark. (Reaching the
    -- latest time ever seen instead stretched every sale's window to "now", so an open
    -- review of one price could own, and explain away, every later row of that price.)
    ALTER TABLE server_clock ADD COLUMN back_mark REAL;
    UPDATE server_clock SET back_mark = high_date
     WHERE high_date IS NOT NULL AND offset_s IS NOT NULL
       AND measured_at + offset_s < high_date - 5.0;
    """,
    # 13: the confirming send of a history match is marked by a count, the sends made when
    # the match was found (two wall stamps compared kept a clock stepped back between them
    # "waiting" for hours); a match already waiting counts from now: at most one more send
    """
    ALTER TABLE charge_intent ADD COLUMN matched_sends INTEGER;
    UPDATE charge_intent SET matched_sends = attempts WHERE matched_at IS NOT NULL;
    """,
    # 14: before issue 41, a refund refused after an abandon left its sale `abandoned`,
    # charged, seen by nobody (no review, no screen): the customer's money held by a sale
    # the till had given up on; and a person's refund ("refund this row") refused left the
    # sale `refunded_per_review`, charged, its review closed. The table now moves both to
    # a person's review (`refund_refused`, as `refund_queue.answer_sale` writes it, a
    # decided review reopened); a file from then gets the review it should have had. Not
    # while another refund of the sale may still land, or has landed.
    """
    INSERT INTO review (intent_id, reason, candidates, opened_at)
    SELECT i.id, 'refund_refused',
           CASE WHEN i.tx_json IS NULL THEN '[]'
                ELSE '[{"others": [], "transaction": ' || i.tx_json || '}]' END,
           (julianday('now') - 2440587.5) * 86400.0
      FROM charge_intent i
     WHERE i.state IN ('abandoned', 'refunded_per_review') AND i.charged = 1
       AND EXISTS (SELECT 1 FROM reversal v WHERE v.intent_id = i.id AND v.state = 'refused')
       AND NOT EXISTS (SELECT 1 FROM reversal v
                        WHERE v.intent_id = i.id AND v.state <> 'refused')
    ON CONFLICT (intent_id) DO UPDATE SET reason = excluded.reason,
       candidates = excluded.candidates, opened_at = excluded.opened_at,
       decided_at = NULL, decision = NULL, decided_tx = NULL, decided_by = NULL;
    UPDATE charge_intent
       SET state = 'needs_review', watching = 0, may_resend = 0, token = NULL,
           resolved_at = (julianday('now') - 2440587.5) * 86400.0
     WHERE state IN ('abandoned', 'refunded_per_review')
       AND id IN (SELECT intent_id FROM review
                   WHERE reason = 'refund_refused' AND decided_at IS NULL);
    """,
    # 15: a history match's confirming send that surely reached nothing (a 429, a refused
    # connection) is owed once more: counted, so a 429 storm cannot hold the till
    """
    ALTER TABLE charge_intent ADD COLUMN confirms_undelivered INTEGER NOT NULL DEFAULT 0;
    """,
    # 16: issue 47: what each Z said of each sale's money (`money.Money`), one line per
    # sale of its shift and one per correction: a sale's last line is what the Zs have
    # said of it so far, and a later Z corrects any whose money has moved since (a charged
    # abandon's refund landed or refused and kept, a review decided). Frozen like the Z.
    """
    CREATE TABLE z_line (
        id          INTEGER PRIMARY KEY,
        z_number    INTEGER NOT NULL,
        intent_id   INTEGER NOT NULL REFERENCES charge_intent (id),
        money       TEXT NOT NULL
                    CHECK (money IN ('charged', 'refunded', 'not_charged', 'unknown')),
        amount_mnt  INTEGER NOT NULL
    );
    CREATE INDEX z_line_intent ON z_line (intent_id, id);
    -- the lines whose money may still move: only these are looked at by a new Z
    CREATE INDEX z_line_open ON z_line (money, intent_id) WHERE money IN ('charged', 'unknown');
    CREATE TRIGGER z_line_frozen BEFORE UPDATE ON z_line
    BEGIN
        SELECT RAISE(ABORT, 'a Z report never changes');
    END;
    CREATE TRIGGER z_line_kept BEFORE DELETE ON z_line
    BEGIN
        SELECT RAISE(ABORT, 'a Z report is kept');
    END;
    """,
    # 17: issue 47's long run (seed 201758): the service's `Date` at the first look-up
    # after the sale's late commits had `settle_s` whose probe saw no row stamped ahead:
    # a charge of the sale stamped at a high-water mark the kiosk never saw lies at or
    # before it (`windows.window_for` reaches it); cleared when the key is sent again
    """
    ALTER TABLE charge_intent ADD COLUMN probed_to REAL;
    """,
)

SCHEMA_VERSION: Final = len(MIGRATIONS)
