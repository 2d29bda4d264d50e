-- user_version 17

-- index attempt_intent on attempt
CREATE INDEX attempt_intent ON attempt (intent_id);

-- index cashier_name on cashier
CREATE UNIQUE INDEX cashier_name ON cashier (name) WHERE active = 1;

-- index charge_intent_charged on charge_intent
CREATE INDEX charge_intent_charged ON charge_intent (charged);

-- index charge_intent_created on charge_intent
CREATE INDEX charge_intent_created ON charge_intent (created_at);

-- index charge_intent_state on charge_intent
CREATE INDEX charge_intent_state ON charge_intent (state);

-- index charge_intent_token on charge_intent
CREATE INDEX charge_intent_token ON charge_intent (token_sha256);

-- index print_job_queued on print_job
CREATE INDEX print_job_queued ON print_job (state, id);

-- index print_job_slip_once on print_job
CREATE UNIQUE INDEX print_job_slip_once ON print_job (kind, ref) WHERE reprint = 0;

-- index reversal_tx on reversal
CREATE INDEX reversal_tx ON reversal (tx_id);

-- index shift_one_open on shift
CREATE UNIQUE INDEX shift_one_open ON shift ((closed_at IS NULL)) WHERE closed_at IS NULL;

-- index z_line_intent on z_line
CREATE INDEX z_line_intent ON z_line (intent_id, id);

-- index z_line_open on z_line
CREATE INDEX z_line_open ON z_line (money, intent_id) WHERE money IN ('charged', 'unknown');

-- table attempt on attempt
CREATE TABLE attempt (
id INTEGER PRIMARY KEY,
intent_id INTEGER,
reversal_id INTEGER,
kind TEXT NOT NULL, -- charge | lookup | reverse
n INTEGER NOT NULL,
sent_at REAL NOT NULL,
elapsed_s REAL,
status INTEGER,
outcome TEXT NOT NULL,
detail TEXT,
server_date REAL
);

-- table cashier on cashier
CREATE TABLE cashier (
id INTEGER PRIMARY KEY,
name TEXT NOT NULL,
pin TEXT NOT NULL, -- scrypt$n$r$p$salt$hash, never the PIN
active INTEGER NOT NULL DEFAULT 1,
created_at REAL NOT NULL
);

-- table charge_intent on charge_intent
CREATE TABLE charge_intent (
id INTEGER PRIMARY KEY,
idem_key TEXT NOT NULL UNIQUE,
-- the exact token while it may still be sent; cleared once the intent is final
token TEXT,
token_sha256 TEXT NOT NULL,
token_tail TEXT NOT NULL,
amount_mnt INTEGER NOT NULL CHECK (amount_mnt > 0),
state TEXT NOT NULL,
-- 1 charged, 0 not charged, NULL not (yet) known
charged INTEGER,
created_at REAL NOT NULL,
first_sent_at REAL,
last_sent_at REAL,
last_end_at REAL,
attempts INTEGER NOT NULL DEFAULT 0,
-- 1 while a request is (or may be) in flight: a crash leaves it set
in_flight INTEGER NOT NULL DEFAULT 0,
-- 1 once any attempt may have reached the service without a clear answer
maybe_sent INTEGER NOT NULL DEFAULT 0,
-- 0 once re-sending stopped (409 after an unclear attempt, horizon, abandon)
may_resend INTEGER NOT NULL DEFAULT 1,
next_try_at REAL,
clock_skew_s REAL,
last_status INTEGER,
last_detail TEXT,
decline_code TEXT,
-- the state to end in when the history shows nothing (declined/refused/not_charged)
if_absent TEXT,
lookups INTEGER NOT NULL DEFAULT 0,
last_lookup_at REAL,
tx_id TEXT UNIQUE,
tx_json TEXT,
-- 1 while an abandoned intent's history is still being watched
watching INTEGER NOT NULL DEFAULT 0,
resolved_at REAL
, last_unclear_end_at REAL, proof TEXT, skew_lo_s REAL, skew_hi_s REAL, answered_lookups INTEGER NOT NULL DEFAULT 0, unclear_end_boot TEXT, unclear_end_up REAL, matched_at REAL, first_sent_boot TEXT, first_sent_up REAL, username TEXT, detail_said TEXT, shift_id INTEGER, matched_sends INTEGER, confirms_undelivered INTEGER NOT NULL DEFAULT 0, probed_to REAL);

-- table foreign_row on foreign_row
CREATE TABLE foreign_row (
tx_id TEXT PRIMARY KEY,
amount_mnt INTEGER NOT NULL,
created_at TEXT NOT NULL,
seen_at REAL NOT NULL,
intent_id INTEGER, -- the look-up that saw it
cleared_at REAL -- an owner cleared the warning
, suspect_until REAL, surplus INTEGER NOT NULL DEFAULT 0);

-- table print_job on print_job
CREATE TABLE print_job (
id INTEGER PRIMARY KEY,
created_at REAL NOT NULL, -- UTC seconds, for people
kind TEXT NOT NULL, -- sale | refund | end_of_day | test
ref TEXT NOT NULL, -- the transaction id, the day
reprint INTEGER NOT NULL DEFAULT 0,
slip TEXT NOT NULL, -- its lines (JSON), frozen when queued
state TEXT NOT NULL DEFAULT 'queued'
CHECK (state IN ('queued', 'printed', 'dropped')),
tries INTEGER NOT NULL DEFAULT 0,
last_error TEXT, -- why the last try failed (Said JSON)
printed_at REAL
);

-- table reversal on reversal
CREATE TABLE reversal (
id INTEGER PRIMARY KEY,
tx_id TEXT NOT NULL,
intent_id INTEGER,
amount_mnt INTEGER,
reason TEXT NOT NULL, -- manual | abandoned
state TEXT NOT NULL,
created_at REAL NOT NULL,
attempts INTEGER NOT NULL DEFAULT 0,
next_try_at REAL,
last_status INTEGER,
message TEXT,
resolved_at REAL
, message_said TEXT, shift_id INTEGER);

-- table review on review
CREATE TABLE review (
intent_id INTEGER PRIMARY KEY,
reason TEXT NOT NULL,
candidates TEXT NOT NULL, -- JSON [{"transaction": wire, "others": [ids]}]
opened_at REAL NOT NULL,
decided_at REAL,
decision TEXT, -- charged | refund | not_charged
decided_tx TEXT,
decided_by TEXT
);

-- table server_clock on server_clock
CREATE TABLE server_clock (
id INTEGER PRIMARY KEY CHECK (id = 1),
offset_s REAL, -- server − local, seconds; NULL: never measured
measured_at REAL, -- local time of the measurement
-- local time since which every measurement agreed with this offset (a jump resets it)
stable_since REAL,
-- 1 when stable_since was set by a jump (an earlier measurement disagreed)
jumped INTEGER NOT NULL DEFAULT 0,
previous_s REAL, -- the offset before the last jump
previous_since REAL, -- since when that one had held
terminal_id TEXT -- this terminal's ter_ id, once a verified reply showed it
, high_s REAL, high_at REAL, terminal_user TEXT, high_date REAL, boot TEXT, frame_s REAL, stable_up REAL, previous_up REAL, previous_frame_s REAL, back_mark REAL);

-- table shift on shift
CREATE TABLE shift (
id INTEGER PRIMARY KEY,
cashier_id INTEGER NOT NULL REFERENCES cashier (id),
opened_at REAL NOT NULL, -- UTC seconds: for people, the history's window
closed_at REAL,
closed_by TEXT CHECK (closed_by IN ('cashier', 'manager')),
z_number INTEGER UNIQUE,
z_report TEXT -- the Z as it was taken (JSON)
);

-- table z_line on z_line
CREATE TABLE z_line (
id INTEGER PRIMARY KEY,
z_number INTEGER NOT NULL,
intent_id INTEGER NOT NULL REFERENCES charge_intent (id),
money TEXT NOT NULL
CHECK (money IN ('charged', 'refunded', 'not_charged', 'unknown')),
amount_mnt INTEGER NOT NULL
);

-- trigger shift_z_frozen on shift
CREATE TRIGGER shift_z_frozen BEFORE UPDATE ON shift WHEN OLD.z_report IS NOT NULL
BEGIN
SELECT RAISE(ABORT, 'a Z report never changes');
END;

-- trigger shift_z_kept on shift
CREATE TRIGGER shift_z_kept BEFORE DELETE ON shift WHEN OLD.z_report IS NOT NULL
BEGIN
SELECT RAISE(ABORT, 'a Z report is kept');
END;

-- trigger z_line_frozen on z_line
CREATE TRIGGER z_line_frozen BEFORE UPDATE ON z_line
BEGIN
SELECT RAISE(ABORT, 'a Z report never changes');
END;

-- trigger z_line_kept on z_line
CREATE TRIGGER z_line_kept BEFORE DELETE ON z_line
BEGIN
SELECT RAISE(ABORT, 'a Z report is kept');
END;
