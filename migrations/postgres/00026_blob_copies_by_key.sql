-- +goose Up
-- The copies of a blob (its row in clear under its bare address, and one
-- sealed row per subject under the address, "." and the subject's key id)
-- are one range of the primary key, which sorts bytewise: from the
-- address up to the address followed by "/", the character after ".".
-- The index of addresses that 00019 made found them too, at the price of
-- an index entry and its WAL for every blob stored; it goes.
DROP INDEX blobs_address;

-- +goose Down
CREATE INDEX blobs_address ON blobs (substr(hash, 1, 64));
