package node

import "sync/atomic"

// procTable finds a live local process by its ID with atomic loads alone,
// for the send path, which would otherwise take n.mu's read lock on every
// message. IDs are handed out in order from firstPID+1, so the table is a
// directory of pages of procPageSize slots, indexed by ID. Writers hold
// n.mu (spawn and unregister); the directory is copied on write, pages
// are written slot by slot with atomic stores. A page whose IDs have all
// been handed out and whose processes have all ended is dropped, so the
// table holds pages for the live processes, plus a directory slot per
// procPageSize IDs ever handed out.
type procTable struct {
	dir  atomic.Pointer[[]*procPage] // page i holds IDs firstPID+1+i*procPageSize onwards; nil: none
	live []int32                     // per page: processes stored and not yet removed; guarded by n.mu
}

// procPageSize is the number of IDs a page holds.
const procPageSize = 256

// procPage holds the processes of procPageSize consecutive IDs.
type procPage [procPageSize]atomic.Pointer[process]

// procSlot returns the page number and the slot of id, which is above firstPID.
func procSlot(id uint64) (page int, slot int) {
	i := id - firstPID - 1
	return int(i / procPageSize), int(i % procPageSize)
}

// load returns the live process with id, or nil.
func (t *procTable) load(id uint64) *process {
	d := t.dir.Load()
	if id <= firstPID || d == nil {
		return nil
	}
	page, slot := procSlot(id)
	if page >= len(*d) || (*d)[page] == nil {
		return nil
	}
	return (*d)[page][slot].Load()
}

// store adds p; n.mu is held.
func (t *procTable) store(p *process) {
	page, slot := procSlot(p.pid.ID)
	var d []*procPage
	if cur := t.dir.Load(); cur != nil {
		d = *cur
	}
	if page >= len(d) || d[page] == nil {
		next := make([]*procPage, max(len(d), page+1)) // a copy: readers keep the old one
		copy(next, d)
		next[page] = new(procPage)
		t.dir.Store(&next)
		d = next
	}
	if page >= len(t.live) {
		t.live = append(t.live, make([]int32, page+1-len(t.live))...)
	}
	t.live[page]++
	d[page][slot].Store(p)
}

// remove takes p out; n.mu is held. handedOut is the highest ID handed
// out so far: a page with none above it is complete, and dropped once
// empty (a spawn still holding an ID of it would make it again).
func (t *procTable) remove(p *process, handedOut uint64) {
	page, slot := procSlot(p.pid.ID)
	d := *t.dir.Load() // p was stored, so its page is there
	if d[page][slot].Load() != p {
		return
	}
	d[page][slot].Store(nil)
	t.live[page]--
	if t.live[page] == 0 && handedOut >= firstPID+uint64(page+1)*procPageSize {
		next := append([]*procPage(nil), d...)
		next[page] = nil
		t.dir.Store(&next)
	}
}
