-- Search keys of 16 hexadecimal digits instead of 8 (`history.terms.KEY_LENGTH`): with 32 bits,
-- a store of a hundred thousand threads would likely hold two whose terms share a key, and so
-- their postings. The index is emptied here (postings first, so deleting the rows finds none
-- to delete), and the store indexes every thread again with the new keys as it opens.
DELETE FROM search_term;
DELETE FROM search;
DELETE FROM search_language;
