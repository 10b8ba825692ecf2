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
INSERT INTO "choices" VALUES(0,3,0,14,35);
INSERT INTO "choices" VALUES(1,3,0,14,35);
INSERT INTO "choices" VALUES(0,4,0,13,34);
INSERT INTO "choices" VALUES(1,4,0,13,34);
INSERT INTO "choices" VALUES(0,5,0,15,47);
INSERT INTO "choices" VALUES(1,5,0,15,47);
INSERT INTO "choices" VALUES(0,6,0,14,44);
INSERT INTO "choices" VALUES(1,6,0,14,44);
INSERT INTO "choices" VALUES(0,7,0,16,45);
INSERT INTO "choices" VALUES(1,7,0,16,45);
INSERT INTO "choices" VALUES(0,8,0,17,44);
INSERT INTO "choices" VALUES(1,8,0,17,44);
INSERT INTO "choices" VALUES(0,9,0,19,48);
INSERT INTO "choices" VALUES(1,9,0,19,48);
CREATE TABLE experiment (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    name TEXT NOT NULL,
    config_json TEXT NOT NULL,
    config_sha256 TEXT NOT NULL,
    created TEXT NOT NULL,
    capicua_version TEXT NOT NULL
);
INSERT INTO "experiment" VALUES(1,'block ab','{"arms": [{"label": "base", "overrides": [], "preset": "block"}, {"label": "candidate", "overrides": ["block_tie=opening_side"], "preset": "block"}], "bot_options": {}, "kind": "ab", "knob": null, "name": "block ab", "pairs": 40, "seats": ["builtin:easy", "builtin:easy", "builtin:easy", "builtin:easy"], "seed": 1, "time_limit_ms": null, "unit": "hand"}','3c6eda68c89fcc40bc0771c9edc637283086a8eaa6a3d80cbfb793fe5178b83a','2026-12-06T17:54:00Z','0.1.0');
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
INSERT INTO "hands" VALUES(0,3,0,0,0,0,27,'',NULL,22,3,0,0,0);
INSERT INTO "hands" VALUES(1,3,0,0,0,0,27,'',NULL,22,3,0,0,0);
INSERT INTO "hands" VALUES(0,4,0,0,1,0,26,'',NULL,22,6,0,0,0);
INSERT INTO "hands" VALUES(1,4,0,0,1,0,26,'',NULL,22,6,0,0,0);
INSERT INTO "hands" VALUES(0,5,0,0,1,0,8,'',NULL,23,3,0,0,0);
INSERT INTO "hands" VALUES(1,5,0,0,1,0,8,'',NULL,23,3,0,0,0);
INSERT INTO "hands" VALUES(0,6,0,0,0,0,17,'',NULL,24,3,0,0,0);
INSERT INTO "hands" VALUES(1,6,0,0,0,0,17,'',NULL,24,3,0,0,0);
INSERT INTO "hands" VALUES(0,7,0,1,0,0,15,'',NULL,22,0,0,0,0);
INSERT INTO "hands" VALUES(1,7,0,1,0,0,15,'',NULL,22,0,0,0,0);
INSERT INTO "hands" VALUES(0,8,0,0,0,0,4,'',NULL,25,6,0,0,0);
INSERT INTO "hands" VALUES(1,8,0,0,0,0,4,'',NULL,25,6,0,0,0);
INSERT INTO "hands" VALUES(0,9,0,0,0,1,3,'',NULL,25,1,0,0,0);
INSERT INTO "hands" VALUES(1,9,0,0,0,1,3,'',NULL,25,1,0,0,0);
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
INSERT INTO "matches" VALUES(0,0,'hand_limit',1,NULL,'[0, 10]',NULL);
INSERT INTO "matches" VALUES(1,0,'hand_limit',1,NULL,'[0, 10]',NULL);
INSERT INTO "matches" VALUES(0,1,'hand_limit',1,NULL,'[0, 2]',NULL);
INSERT INTO "matches" VALUES(1,1,'hand_limit',1,NULL,'[0, 2]',NULL);
INSERT INTO "matches" VALUES(0,2,'hand_limit',1,NULL,'[0, 9]',NULL);
INSERT INTO "matches" VALUES(1,2,'hand_limit',1,NULL,'[0, 9]',NULL);
INSERT INTO "matches" VALUES(0,3,'hand_limit',0,NULL,'[27, 0]',NULL);
INSERT INTO "matches" VALUES(1,3,'hand_limit',0,NULL,'[27, 0]',NULL);
INSERT INTO "matches" VALUES(0,4,'hand_limit',1,NULL,'[0, 26]',NULL);
INSERT INTO "matches" VALUES(1,4,'hand_limit',1,NULL,'[0, 26]',NULL);
INSERT INTO "matches" VALUES(0,5,'hand_limit',1,NULL,'[0, 8]',NULL);
INSERT INTO "matches" VALUES(1,5,'hand_limit',1,NULL,'[0, 8]',NULL);
INSERT INTO "matches" VALUES(0,6,'hand_limit',0,NULL,'[17, 0]',NULL);
INSERT INTO "matches" VALUES(1,6,'hand_limit',0,NULL,'[17, 0]',NULL);
INSERT INTO "matches" VALUES(0,7,'hand_limit',0,NULL,'[15, 0]',NULL);
INSERT INTO "matches" VALUES(1,7,'hand_limit',0,NULL,'[15, 0]',NULL);
INSERT INTO "matches" VALUES(0,8,'hand_limit',0,NULL,'[4, 0]',NULL);
INSERT INTO "matches" VALUES(1,8,'hand_limit',0,NULL,'[4, 0]',NULL);
INSERT INTO "matches" VALUES(0,9,'hand_limit',0,NULL,'[3, 0]',NULL);
INSERT INTO "matches" VALUES(1,9,'hand_limit',0,NULL,'[3, 0]',NULL);
COMMIT;
