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
INSERT INTO "bots" VALUES('candidate','builtin:easy',0,NULL);
INSERT INTO "bots" VALUES('base','builtin:random',0,NULL);
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
INSERT INTO "hands" VALUES('s00000-r0',0,0,1,'[17, 0]');
INSERT INTO "hands" VALUES('s00000-r0',1,0,1,'[34, 0]');
INSERT INTO "hands" VALUES('s00000-r1',0,1,1,'[0, 66]');
INSERT INTO "hands" VALUES('s00001-r0',0,0,1,'[31, 0]');
INSERT INTO "hands" VALUES('s00001-r1',0,1,1,'[0, 10]');
INSERT INTO "hands" VALUES('s00001-r1',1,1,1,'[0, 51]');
INSERT INTO "hands" VALUES('s00002-r0',0,1,1,'[0, 50]');
INSERT INTO "hands" VALUES('s00002-r1',0,1,1,'[0, 23]');
INSERT INTO "hands" VALUES('s00002-r1',1,0,1,'[21, 0]');
INSERT INTO "hands" VALUES('s00002-r1',2,1,1,'[0, 8]');
INSERT INTO "hands" VALUES('s00003-r0',0,0,1,'[25, 0]');
INSERT INTO "hands" VALUES('s00003-r0',1,1,1,'[0, 36]');
INSERT INTO "hands" VALUES('s00003-r1',0,0,1,'[37, 0]');
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
INSERT INTO "matches" VALUES('s00000-r0','s00000',0,6571203300527234932,0,'["candidate", "base"]','["candidate", "base"]',NULL,'normal','side 0 reached 102 of 30 (pollona)',0,'[0, 1]','[102, 0]',NULL,2,'replays/s00000-r0.json.gz','2026-12-06T17:53:59Z','2026-12-06T17:53:59Z',1.44833599915727972984e-03);
INSERT INTO "matches" VALUES('s00000-r1','s00000',0,6571203300527234932,1,'["base", "candidate"]','["base", "candidate"]',NULL,'normal','side 1 reached 132 of 30 (pollona)',1,'[1, 0]','[0, 132]',NULL,1,'replays/s00000-r1.json.gz','2026-12-06T17:53:59Z','2026-12-06T17:53:59Z',4.84930399943550582975e-03);
INSERT INTO "matches" VALUES('s00001-r0','s00001',1,3515495077541816184,0,'["candidate", "base"]','["candidate", "base"]',NULL,'normal','side 0 reached 62 of 30 (pollona)',0,'[0, 1]','[62, 0]',NULL,1,'replays/s00001-r0.json.gz','2026-12-06T17:53:59Z','2026-12-06T17:53:59Z',6.06284000241430476307e-04);
INSERT INTO "matches" VALUES('s00001-r1','s00001',1,3515495077541816184,1,'["base", "candidate"]','["base", "candidate"]',NULL,'normal','side 1 reached 122 of 30 (pollona)',1,'[1, 0]','[0, 122]',NULL,2,'replays/s00001-r1.json.gz','2026-12-06T17:53:59Z','2026-12-06T17:53:59Z',8.9196599947172217071e-04);
INSERT INTO "matches" VALUES('s00002-r0','s00002',2,3975656143356257689,0,'["candidate", "base"]','["candidate", "base"]',NULL,'normal','side 1 reached 100 of 30 (pollona)',1,'[1, 0]','[0, 100]',NULL,1,'replays/s00002-r0.json.gz','2026-12-06T17:53:59Z','2026-12-06T17:53:59Z',2.63958998402813449501e-04);
INSERT INTO "matches" VALUES('s00002-r1','s00002',2,3975656143356257689,1,'["base", "candidate"]','["base", "candidate"]',NULL,'normal','side 1 reached 31 of 30',1,'[1, 0]','[21, 31]',NULL,3,'replays/s00002-r1.json.gz','2026-12-06T17:53:59Z','2026-12-06T17:53:59Z',5.8126090007135644555e-03);
INSERT INTO "matches" VALUES('s00003-r0','s00003',3,7079323183386470126,0,'["candidate", "base"]','["candidate", "base"]',NULL,'normal','side 1 reached 36 of 30',1,'[1, 0]','[25, 36]',NULL,2,'replays/s00003-r0.json.gz','2026-12-06T17:53:59Z','2026-12-06T17:53:59Z',1.24857900118513498455e-03);
INSERT INTO "matches" VALUES('s00003-r1','s00003',3,7079323183386470126,1,'["base", "candidate"]','["base", "candidate"]',NULL,'normal','side 0 reached 74 of 30 (pollona)',0,'[0, 1]','[74, 0]',NULL,1,'replays/s00003-r1.json.gz','2026-12-06T17:53:59Z','2026-12-06T17:53:59Z',4.92342998768435791134e-04);
CREATE TABLE think (
    match_key TEXT NOT NULL REFERENCES matches(key),
    seat INTEGER NOT NULL,
    bot TEXT NOT NULL,
    decisions INTEGER NOT NULL,
    total_us INTEGER NOT NULL,
    max_us INTEGER NOT NULL,
    PRIMARY KEY (match_key, seat)
);
CREATE TABLE tournament (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    name TEXT NOT NULL,
    config_json TEXT NOT NULL,
    config_sha256 TEXT NOT NULL,
    created TEXT NOT NULL,
    capicua_version TEXT NOT NULL
);
INSERT INTO "tournament" VALUES(1,'sprt builtin:easy vs builtin:random','{"bots": {"base": "builtin:random", "candidate": "builtin:easy"}, "candidate": "candidate", "format": "gauntlet", "games": 1000000, "max_crashes": 3, "name": "sprt builtin:easy vs builtin:random", "on_timeout": "forfeit", "overrides": ["target=30"], "preset": "iq-1v1", "seed": 1, "time_limit_ms": 5000}','50d2b58fd7ee7ee7817d1a575b336472db4aaa4b7b3a74f4f384fdaea10cdc98','2026-12-06T17:53:59Z','0.1.0');
CREATE INDEX matches_set ON matches(set_key);
CREATE INDEX matches_seq ON matches(seq);
DELETE FROM "sqlite_sequence";
COMMIT;
