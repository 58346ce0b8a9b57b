SELECT c._rid, [{"item": c.n}] AS orderByItems, c AS payload
FROM c
WHERE (true)
ORDER BY c.n