-- Each "-- session" starts a new `mariadb --batch` process; the lines
-- after it are its standard input. Sessions run one after another on the
-- same server, with `test` as the current database.
-- session
SELECT GET_LOCK('a', 0);
SELECT GET_LOCK('a', 0);
SELECT IS_FREE_LOCK('a');
SELECT IS_USED_LOCK('a') = CONNECTION_ID();
SELECT IS_USED_LOCK('nobody');
SELECT RELEASE_LOCK('a');
SELECT RELEASE_LOCK('a');
SELECT RELEASE_LOCK('a');
SELECT RELEASE_LOCK('never');
SELECT GET_LOCK('b', 1), GET_LOCK('c', -1);
SELECT RELEASE_ALL_LOCKS();
SELECT RELEASE_ALL_LOCKS();
SELECT GET_LOCK(NULL, 0);
SELECT IS_FREE_LOCK(NULL);
SELECT GET_LOCK('kept', 0);
-- session
SELECT IS_FREE_LOCK('kept');
SELECT IS_USED_LOCK('kept');
SELECT GET_LOCK('kept', 0) AS got;
BEGIN;
SELECT GET_LOCK('x', 0);
ROLLBACK;
SELECT RELEASE_LOCK('x');
-- session
CREATE TABLE locks (name VARCHAR(64) PRIMARY KEY, owner VARCHAR(64) NOT NULL, token BIGINT, expires DATETIME);
CREATE TABLE locks (name VARCHAR(64) PRIMARY KEY);
CREATE TABLE IF NOT EXISTS locks (name VARCHAR(64) PRIMARY KEY);
INSERT INTO locks VALUES ('b', 'w1', 1, '2030-01-01 00:00:00');
INSERT INTO locks VALUES ('b', 'w2', 2, '2030-01-01 00:00:00');
INSERT INTO locks (name, owner, token, expires) VALUES ('a', 'w2', 2, '2000-01-01 00:00:00'), ('c', 'w3', 3, NULL);
INSERT IGNORE INTO locks VALUES ('a', 'w9', 9, NULL), ('d', 'w4', 4, NULL);
SELECT * FROM locks;
SELECT name, owner FROM locks WHERE expires < NOW();
SELECT name FROM locks WHERE expires IS NULL;
SELECT name, token FROM locks WHERE token >= 2 AND token <> 3;
SELECT name FROM locks WHERE token < 2 OR name = 'd';
UPDATE locks SET owner = 'w5', token = token + 1 WHERE name = 'a' AND expires <= NOW();
SELECT owner, token FROM locks WHERE name = 'a';
DELETE FROM locks WHERE token > 3;
SELECT name FROM locks;
INSERT INTO locks (name) VALUES ('e');
INSERT INTO locks VALUES ('e', NULL, 1, NULL);
INSERT INTO locks VALUES ('e', 'w', 1);
INSERT INTO locks (nope) VALUES (1);
-- session
START TRANSACTION;
INSERT INTO locks VALUES ('t', 'w6', 6, NULL);
SELECT owner FROM locks WHERE name = 't' FOR UPDATE;
ROLLBACK;
SELECT name FROM locks WHERE name = 't';
BEGIN;
UPDATE locks SET owner = 'w7' WHERE name = 'b';
COMMIT;
SELECT owner FROM locks WHERE name = 'b';
COMMIT;
ROLLBACK;
SELECT name, owner FROM locks WHERE name = 'b' FOR UPDATE;
-- session
SELECT foo(1);
SELEC 1;
SELECT 1 FROM;
SELECT * FROM nope;
DELETE FROM nope;
SELECT GET_LOCK('a');
SELECT RELEASE_LOCK();
SELECT nope FROM locks;
SELECT 1 + 2, 'text', NULL;
SELECT DATABASE();
DROP TABLE locks;
DROP TABLE locks;
DROP TABLE IF EXISTS locks;
-- session
CREATE TABLE u (id INT PRIMARY KEY, tok VARCHAR(10) UNIQUE, n INT);
SELECT id FROM u WHERE nope = 1;
INSERT INTO u VALUES (1, 'x', 1), (2, 'y', 2);
INSERT INTO u VALUES (3, 'x', 3);
UPDATE u SET tok = 'y' WHERE id = 1;
UPDATE u SET nope = 1;
UPDATE u SET n = 5 WHERE nope = 1;
DELETE FROM u WHERE nope = 2;
SELECT id, tok FROM u WHERE NOT id = 1;
SELECT id FROM u WHERE n IS NOT NULL AND (id = 1 OR id = 2);
UPDATE u SET n = n - 1 WHERE id >= 1;
SELECT * FROM u;
SELECT GET_LOCK('a', 0) AS 'g', RELEASE_LOCK('a') AS r;
SELECT IS_FREE_LOCK('a');
SELECT 'it''s', "dq", 5 - 7;
INSERT INTO u VALUES (9, NULL, NULL);
INSERT INTO u VALUES (10, NULL, NULL);
SELECT id FROM u WHERE tok IS NULL;
DROP TABLE u;
-- session
CREATE TABLE s (slot INT PRIMARY KEY, holder VARCHAR(20));
SELECT COUNT(*) FROM s;
INSERT INTO s VALUES (1, 'a'), (2, NULL), (3, 'c');
SELECT COUNT(*) FROM s;
SELECT COUNT(*), COUNT(holder) FROM s WHERE slot >= 2;
SELECT COUNT(*) AS n FROM s WHERE holder = 'zz';
DROP TABLE s;
