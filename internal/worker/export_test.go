package worker

// HoldBeforeWrite makes p run hold between each batch's claim in Redis and its write to
// MySQL: what a slow worker's transaction lets happen meanwhile.
func HoldBeforeWrite(p *Persister, hold func()) { p.beforeWrite = hold }
