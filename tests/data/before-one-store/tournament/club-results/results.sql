BEGIN TRANSACTION;
CREATE TABLE abandoned (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    match_key TEXT NOT NULL,
    reason TEXT NOT NULL,
    time TEXT NOT NULL
);
CREATE TABLE bots (
    name TEXT PRIMARY KEY,
    spec TEXT NOT NULL,
    disqualified INTEGER NOT NULL DEFAULT 0,
    disqualified_reason TEXT
);
INSERT INTO "bots" VALUES('random','builtin:random',0,NULL);
INSERT INTO "bots" VALUES('easy','builtin:easy',0,NULL);
CREATE TABLE failures (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    bot TEXT NOT NULL,
    kind TEXT NOT NULL,
    match_key TEXT,
    detail TEXT NOT NULL,
    time TEXT NOT NULL
);
CREATE TABLE hands (
    match_key TEXT NOT NULL REFERENCES matches(key),
    hand INTEGER NOT NULL,
    winner_side INTEGER,
    blocked INTEGER NOT NULL,
    points_json TEXT NOT NULL,
    PRIMARY KEY (match_key, hand)
);
INSERT INTO "hands" VALUES('s00000-r0',0,1,1,'[0, 48]');
INSERT INTO "hands" VALUES('s00000-r1',0,1,1,'[0, 67]');
CREATE TABLE matches (
    key TEXT PRIMARY KEY,
    set_key TEXT NOT NULL,
    seq INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    rotation INTEGER NOT NULL,
    seats_json TEXT NOT NULL,
    sides_json TEXT NOT NULL,
    server_match TEXT,
    termination TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    winner_side INTEGER,
    ranking_json TEXT NOT NULL,
    scores_json TEXT NOT NULL,
    forfeited_side INTEGER,
    hands INTEGER NOT NULL,
    replay_path TEXT,
    started TEXT NOT NULL,
    finished TEXT NOT NULL,
    seconds REAL NOT NULL
);
INSERT INTO "matches" VALUES('s00000-r0','s00000',0,4407569858975848536,0,'["random", "easy"]','["random", "easy"]','matches/55ddb79db4c04f37','normal','side 1 reached 96 of 30 (pollona)',1,'[1, 0]','[0, 96]',NULL,1,'replays/s00000-r0.json.gz','2026-12-06T17:53:55Z','2026-12-06T17:53:55Z',6.71546220000891480594e-02);
INSERT INTO "matches" VALUES('s00000-r1','s00000',0,4407569858975848536,1,'["easy", "random"]','["easy", "random"]','matches/c0e2d1f654cdc194','normal','side 1 reached 134 of 30 (pollona)',1,'[1, 0]','[0, 134]',NULL,1,'replays/s00000-r1.json.gz','2026-12-06T17:53:55Z','2026-12-06T17:53:56Z',7.09177310000086436048e-02);
CREATE TABLE think (
    match_key TEXT NOT NULL REFERENCES matches(key),
    seat INTEGER NOT NULL,
    bot TEXT NOT NULL,
    decisions INTEGER NOT NULL,
    total_us INTEGER NOT NULL,
    max_us INTEGER NOT NULL,
    PRIMARY KEY (match_key, seat)
);
INSERT INTO "think" VALUES('s00000-r0',0,'random',2,20375,12742);
INSERT INTO "think" VALUES('s00000-r0',1,'easy',2,4573,2765);
INSERT INTO "think" VALUES('s00000-r1',0,'easy',1,2438,2438);
INSERT INTO "think" VALUES('s00000-r1',1,'random',1,1538,1538);
CREATE TABLE tournament (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    name TEXT NOT NULL,
    config_json TEXT NOT NULL,
    config_sha256 TEXT NOT NULL,
    created TEXT NOT NULL,
    capicua_version TEXT NOT NULL
);
INSERT INTO "tournament" VALUES(1,'club','{"bots": {"easy": "builtin:easy", "random": "builtin:random"}, "candidate": null, "format": "round-robin", "games": 2, "max_crashes": 3, "name": "club", "on_timeout": "forfeit", "overrides": ["target=30"], "preset": "iq-1v1", "seed": 3, "time_limit_ms": 5000}','433b33b018fa2272dfde857b0254c4b88c2a9c14df9e32575be82d4271d29327','2026-12-06T17:53:53Z','0.1.0');
CREATE INDEX matches_set ON matches(set_key);
CREATE INDEX matches_seq ON matches(seq);
DELETE FROM "sqlite_sequence";
COMMIT;
