//go:build !tenantkit_nosqlite

package attachments

import (
	"strings"
	"unicode/utf8"

	"github.com/tenantkit/tenantkit/store"
)

func init() { nameSearches[store.SQLiteDialect] = sqliteNameSearch }

// sqliteNameSearch reads the candidates of a file-name search from
// attachment_names (migration 0004: the trigrams of each attachment's
// name folded by tk_fold, under the attachment's key in
// attachment_name_keys, not its rowid, which VACUUM may renumber),
// driving the query from it (CROSS JOIN keeps it the outer loop, so a
// count stops after the matches it needs) and reading each candidate's
// attachment by id. The index holds the folded name, and the
// term is looked up folded the same way (store.FoldCase), so a name
// whose folded form holds the folded term is always a candidate,
// whatever the characters. A trigram phrase finds nothing for a term
// under three characters; such a term, or one that is not valid UTF-8
// or holds a NUL, reads the names as before.
func sqliteNameSearch(search string) (nameIndex, bool) {
	term := store.FoldCase(search)
	if utf8.RuneCountInString(term) < 3 || !utf8.ValidString(term) || strings.ContainsRune(term, 0) {
		return nameIndex{}, false
	}
	return nameIndex{
		from: "attachment_names CROSS JOIN attachment_name_keys ON attachment_name_keys.name_key = attachment_names.rowid" +
			" CROSS JOIN attachments a ON a.id = attachment_name_keys.attachment_id",
		cond: "attachment_names MATCH ?",
		arg:  `"` + strings.ReplaceAll(term, `"`, `""`) + `"`,
	}, true
}
