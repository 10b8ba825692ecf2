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
INSERT INTO "bots" VALUES('python-easybots-Easy','python:easybots:Easy',0,NULL);
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
INSERT INTO "hands" VALUES('a0-p0000000',0,1,0,'[0, 10]');
INSERT INTO "hands" VALUES('a0-p0000001',0,1,0,'[0, 2]');
INSERT INTO "hands" VALUES('a1-p0000000',0,1,0,'[0, 10]');
INSERT INTO "hands" VALUES('a1-p0000001',0,1,0,'[0, 2]');
INSERT INTO "hands" VALUES('a0-p0000002',0,1,0,'[0, 9]');
INSERT INTO "hands" VALUES('a1-p0000002',0,1,0,'[0, 9]');
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
INSERT INTO "matches" VALUES('a0-p0000000','p0000000',0,6571203300527234932,0,'["python-easybots-Easy", "python-easybots-Easy", "python-easybots-Easy", "python-easybots-Easy"]','["python-easybots-Easy", "python-easybots-Easy"]','matches/2876007864652779','hand_limit','max_hands=1 reached; side 1 leads',1,'[1, 0]','[0, 10]',NULL,1,'replays/a0-p0000000.json.gz','2026-12-06T17:54:04Z','2026-12-06T17:54:04Z',1.22886774999642511829e-01);
INSERT INTO "matches" VALUES('a0-p0000001','p0000001',1,3515495077541816184,0,'["python-easybots-Easy", "python-easybots-Easy", "python-easybots-Easy", "python-easybots-Easy"]','["python-easybots-Easy", "python-easybots-Easy"]','matches/c73e106e072601a8','hand_limit','max_hands=1 reached; side 1 leads',1,'[1, 0]','[0, 2]',NULL,1,'replays/a0-p0000001.json.gz','2026-12-06T17:54:04Z','2026-12-06T17:54:04Z',1.69343830999423516914e-01);
INSERT INTO "matches" VALUES('a1-p0000000','p0000000',0,6571203300527234932,1,'["python-easybots-Easy", "python-easybots-Easy", "python-easybots-Easy", "python-easybots-Easy"]','["python-easybots-Easy", "python-easybots-Easy"]','matches/30435f7991e01885','hand_limit','max_hands=1 reached; side 1 leads',1,'[1, 0]','[0, 10]',NULL,1,'replays/a1-p0000000.json.gz','2026-12-06T17:54:04Z','2026-12-06T17:54:04Z',1.87421035001534619368e-01);
INSERT INTO "matches" VALUES('a1-p0000001','p0000001',1,3515495077541816184,1,'["python-easybots-Easy", "python-easybots-Easy", "python-easybots-Easy", "python-easybots-Easy"]','["python-easybots-Easy", "python-easybots-Easy"]','matches/b6096ed4d1754683','hand_limit','max_hands=1 reached; side 1 leads',1,'[1, 0]','[0, 2]',NULL,1,'replays/a1-p0000001.json.gz','2026-12-06T17:54:04Z','2026-12-06T17:54:04Z',1.91077138000764534808e-01);
INSERT INTO "matches" VALUES('a0-p0000002','p0000002',2,3975656143356257689,0,'["python-easybots-Easy", "python-easybots-Easy", "python-easybots-Easy", "python-easybots-Easy"]','["python-easybots-Easy", "python-easybots-Easy"]','matches/e377fad1a85f1855','hand_limit','max_hands=1 reached; side 1 leads',1,'[1, 0]','[0, 9]',NULL,1,'replays/a0-p0000002.json.gz','2026-12-06T17:54:04Z','2026-12-06T17:54:04Z',4.29187770005228230729e-02);
INSERT INTO "matches" VALUES('a1-p0000002','p0000002',2,3975656143356257689,1,'["python-easybots-Easy", "python-easybots-Easy", "python-easybots-Easy", "python-easybots-Easy"]','["python-easybots-Easy", "python-easybots-Easy"]','matches/2ec1f08c6eab5796','hand_limit','max_hands=1 reached; side 1 leads',1,'[1, 0]','[0, 9]',NULL,1,'replays/a1-p0000002.json.gz','2026-12-06T17:54:04Z','2026-12-06T17:54:04Z',5.38480949999211588874e-02);
CREATE TABLE think (
    match_key TEXT NOT NULL REFERENCES matches(key),
    seat INTEGER NOT NULL,
    bot TEXT NOT NULL,
    decisions INTEGER NOT NULL,
    total_us INTEGER NOT NULL,
    max_us INTEGER NOT NULL,
    PRIMARY KEY (match_key, seat)
);
INSERT INTO "think" VALUES('a0-p0000000',0,'python-easybots-Easy',4,30494,21853);
INSERT INTO "think" VALUES('a0-p0000000',1,'python-easybots-Easy',5,21843,14912);
INSERT INTO "think" VALUES('a0-p0000000',2,'python-easybots-Easy',2,33116,23540);
INSERT INTO "think" VALUES('a0-p0000000',3,'python-easybots-Easy',3,4593,2911);
INSERT INTO "think" VALUES('a0-p0000001',0,'python-easybots-Easy',1,7538,7538);
INSERT INTO "think" VALUES('a0-p0000001',1,'python-easybots-Easy',3,16041,9366);
INSERT INTO "think" VALUES('a0-p0000001',2,'python-easybots-Easy',5,51913,31039);
INSERT INTO "think" VALUES('a0-p0000001',3,'python-easybots-Easy',4,53964,27533);
INSERT INTO "think" VALUES('a1-p0000000',0,'python-easybots-Easy',4,27945,18807);
INSERT INTO "think" VALUES('a1-p0000000',1,'python-easybots-Easy',5,52793,23509);
INSERT INTO "think" VALUES('a1-p0000000',2,'python-easybots-Easy',2,16981,15759);
INSERT INTO "think" VALUES('a1-p0000000',3,'python-easybots-Easy',3,37875,27306);
INSERT INTO "think" VALUES('a1-p0000001',0,'python-easybots-Easy',1,7397,7397);
INSERT INTO "think" VALUES('a1-p0000001',1,'python-easybots-Easy',3,24362,17185);
INSERT INTO "think" VALUES('a1-p0000001',2,'python-easybots-Easy',5,42613,27566);
INSERT INTO "think" VALUES('a1-p0000001',3,'python-easybots-Easy',4,57254,27643);
INSERT INTO "think" VALUES('a0-p0000002',0,'python-easybots-Easy',3,2592,971);
INSERT INTO "think" VALUES('a0-p0000002',1,'python-easybots-Easy',4,3496,984);
INSERT INTO "think" VALUES('a0-p0000002',2,'python-easybots-Easy',4,3650,1067);
INSERT INTO "think" VALUES('a0-p0000002',3,'python-easybots-Easy',4,4663,2010);
INSERT INTO "think" VALUES('a1-p0000002',0,'python-easybots-Easy',3,2983,1196);
INSERT INTO "think" VALUES('a1-p0000002',1,'python-easybots-Easy',4,17476,14598);
INSERT INTO "think" VALUES('a1-p0000002',2,'python-easybots-Easy',4,4746,2070);
INSERT INTO "think" VALUES('a1-p0000002',3,'python-easybots-Easy',4,9732,6889);
CREATE TABLE tournament (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    name TEXT NOT NULL,
    config_json TEXT NOT NULL,
    config_sha256 TEXT NOT NULL,
    created TEXT NOT NULL,
    capicua_version TEXT NOT NULL
);
INSERT INTO "tournament" VALUES(1,'block ab','{"bots": {"python-easybots-Easy": "python:easybots:Easy"}, "candidate": null, "format": "round-robin", "games": 3, "max_crashes": 3, "name": "block ab", "on_timeout": "forfeit", "overrides": ["max_hands=1"], "preset": "block", "seed": 1, "time_limit_ms": 5000}','b2f8da75645aa090fc924db9e7bb6b6c2ce752a35d75e9235b278da34d813a57','2026-12-06T17:54:02Z','0.1.0');
CREATE INDEX matches_set ON matches(set_key);
CREATE INDEX matches_seq ON matches(seq);
DELETE FROM "sqlite_sequence";
COMMIT;
