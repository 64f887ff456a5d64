package checkpoint

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// Reading git's index file (versions 2 and 3, SHA-1), so that a snapshot
// knows what changed between the last tree and the new one without asking
// `git diff-tree`: the index before the snapshot holds, in its cache-tree
// extension, the tree it was last written as, and its entries; the index
// after holds the new ones. Only the paths the snapshot gave git
// (added, modified, removed) can differ, so comparing those is the
// diff. Anything this does not read (version 4, another hash, a cache
// tree that is not valid at the root) leaves the diff to git.

const (
	indexHeaderLen = 12
	indexEntryMin  = 62 // stat data (40), object id (20), flags (2)
	oidLen         = 20
)

// indexEntries returns the entries of the index in b at the given paths
// (mode and object id; a path it does not hold is absent), and the root
// tree of its cache-tree extension ("" when it has no valid one). ok is
// false for an index this does not read.
func indexEntries(b []byte, paths map[string]bool) (entries map[string]blob, root string, ok bool) {
	if len(b) < indexHeaderLen+oidLen || !bytes.Equal(b[:4], []byte("DIRC")) {
		return nil, "", false
	}
	version := binary.BigEndian.Uint32(b[4:8])
	if version != 2 && version != 3 {
		return nil, "", false
	}
	n := binary.BigEndian.Uint32(b[8:12])
	end := len(b) - oidLen // the trailing checksum
	entries = map[string]blob{}
	off := indexHeaderLen
	for range n {
		if off+indexEntryMin > end {
			return nil, "", false
		}
		mode := binary.BigEndian.Uint32(b[off+24 : off+28])
		flags := binary.BigEndian.Uint16(b[off+60 : off+62])
		nameAt := off + indexEntryMin
		if flags&0x4000 != 0 { // extended flags (version 3)
			if version < 3 {
				return nil, "", false
			}
			nameAt += 2
		}
		nameLen := int(flags & 0x0fff)
		if nameLen == 0x0fff { // longer: up to the NUL
			k := bytes.IndexByte(b[nameAt:end], 0)
			if k < 0 {
				return nil, "", false
			}
			nameLen = k
		}
		if nameAt+nameLen > end || flags&0x3000 != 0 { // a conflict stage: not a snapshot's index
			return nil, "", false
		}
		name := b[nameAt : nameAt+nameLen]
		if paths[string(name)] {
			entries[string(name)] = blob{mode: fmt.Sprintf("%06o", mode), id: hex.EncodeToString(b[off+40 : off+60])}
		}
		// Entries are padded with 1 to 8 NULs to a multiple of 8 bytes.
		size := nameAt - off + nameLen
		off += (size + 8) &^ 7
	}
	for off+8 <= end {
		sig := string(b[off : off+4])
		size := int(binary.BigEndian.Uint32(b[off+4 : off+8]))
		data := off + 8
		if size < 0 || data+size > end {
			return nil, "", false
		}
		if sig == "TREE" {
			root = cacheTreeRoot(b[data : data+size])
		}
		off = data + size
	}
	return entries, root, true
}

// cacheTreeRoot reads the root of a cache-tree extension: "" NUL, the
// entry count (-1 when invalid), a space, the subtree count, a newline,
// then the tree's object id when valid.
func cacheTreeRoot(d []byte) string {
	if len(d) == 0 || d[0] != 0 {
		return ""
	}
	nl := bytes.IndexByte(d, '\n')
	if nl < 0 {
		return ""
	}
	count, _, ok := bytes.Cut(d[1:nl], []byte{' '})
	if !ok {
		return ""
	}
	if c, err := strconv.Atoi(string(count)); err != nil || c < 0 || nl+1+oidLen > len(d) {
		return ""
	}
	return hex.EncodeToString(d[nl+1 : nl+1+oidLen])
}

// indexDiff is what changed among paths between two index files' bytes,
// as diff-tree would list it between the old index's tree and the new
// one's (path order), and the old tree; ok is false when either file is
// not one indexEntries reads or the old one has no valid tree.
func indexDiff(before, after []byte, paths []string) (d []change, oldTree string, ok bool) {
	want := make(map[string]bool, len(paths))
	for _, p := range paths {
		want[p] = true
	}
	old, oldTree, ok := indexEntries(before, want)
	if !ok || oldTree == "" {
		return nil, "", false
	}
	cur, _, ok := indexEntries(after, want)
	if !ok {
		return nil, "", false
	}
	for _, p := range slices.Sorted(maps.Keys(want)) {
		o, n := old[p], cur[p]
		if o != n {
			d = append(d, change{path: p, old: o, new: n})
		}
	}
	return d, oldTree, true
}
