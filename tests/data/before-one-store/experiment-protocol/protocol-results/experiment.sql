BEGIN TRANSACTION;
CREATE TABLE choices (
    arm INTEGER NOT NULL,
    pair INTEGER NOT NULL,
    hand INTEGER NOT NULL,
    choices INTEGER NOT NULL,
    options INTEGER NOT NULL,
    PRIMARY KEY (arm, pair, hand)
);
INSERT INTO "choices" VALUES(0,0,0,14,46);
INSERT INTO "choices" VALUES(1,0,0,14,46);
INSERT INTO "choices" VALUES(0,1,0,13,31);
INSERT INTO "choices" VALUES(1,1,0,13,31);
INSERT INTO "choices" VALUES(0,2,0,15,36);
INSERT INTO "choices" VALUES(1,2,0,15,36);
CREATE TABLE experiment (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    name TEXT NOT NULL,
    config_json TEXT NOT NULL,
    config_sha256 TEXT NOT NULL,
    created TEXT NOT NULL,
    capicua_version TEXT NOT NULL
);
INSERT INTO "experiment" VALUES(1,'block ab','{"arms": [{"label": "base", "overrides": [], "preset": "block"}, {"label": "candidate", "overrides": ["block_tie=opening_side"], "preset": "block"}], "bot_options": {}, "kind": "ab", "knob": null, "name": "block ab", "pairs": 3, "seats": ["python:easybots:Easy", "python:easybots:Easy", "python:easybots:Easy", "python:easybots:Easy"], "seed": 1, "time_limit_ms": 5000, "unit": "hand"}','f648aec000521e53fff9a963dfa1a1640a7d822200647444dbf1bffaa212993c','2026-12-06T17:54:02Z','0.1.0');
CREATE TABLE hands (
    arm INTEGER NOT NULL,
    pair INTEGER NOT NULL,
    hand INTEGER NOT NULL,
    blocked INTEGER NOT NULL,
    winner INTEGER,
    opener_side INTEGER NOT NULL,
    points INTEGER NOT NULL,
    bonuses TEXT NOT NULL,
    reset TEXT,
    plays INTEGER NOT NULL,
    passes INTEGER NOT NULL,
    draws INTEGER NOT NULL,
    defers INTEGER NOT NULL,
    redeals INTEGER NOT NULL,
    PRIMARY KEY (arm, pair, hand)
);
INSERT INTO "hands" VALUES(0,0,0,0,1,1,10,'',NULL,22,9,0,0,0);
INSERT INTO "hands" VALUES(1,0,0,0,1,1,10,'',NULL,22,9,0,0,0);
INSERT INTO "hands" VALUES(0,1,0,0,1,0,2,'',NULL,24,2,0,0,0);
INSERT INTO "hands" VALUES(1,1,0,0,1,0,2,'',NULL,24,2,0,0,0);
INSERT INTO "hands" VALUES(0,2,0,0,1,1,9,'',NULL,22,3,0,0,0);
INSERT INTO "hands" VALUES(1,2,0,0,1,1,9,'',NULL,22,3,0,0,0);
CREATE TABLE matches (
    arm INTEGER NOT NULL,
    pair INTEGER NOT NULL,
    termination TEXT NOT NULL,
    winner INTEGER,
    shutout TEXT,
    scores_json TEXT NOT NULL,
    source TEXT,
    PRIMARY KEY (arm, pair)
);
INSERT INTO "matches" VALUES(0,0,'hand_limit',1,NULL,'[0, 10]','a0-p0000000');
INSERT INTO "matches" VALUES(1,0,'hand_limit',1,NULL,'[0, 10]','a1-p0000000');
INSERT INTO "matches" VALUES(0,1,'hand_limit',1,NULL,'[0, 2]','a0-p0000001');
INSERT INTO "matches" VALUES(1,1,'hand_limit',1,NULL,'[0, 2]','a1-p0000001');
INSERT INTO "matches" VALUES(0,2,'hand_limit',1,NULL,'[0, 9]','a0-p0000002');
INSERT INTO "matches" VALUES(1,2,'hand_limit',1,NULL,'[0, 9]','a1-p0000002');
COMMIT;
