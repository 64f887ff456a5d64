package shell

import "testing"

// TestMayChangeFiles: the workspace checkpoint is taken before a command
// unless it is known to only read. Every "false" here is a command the
// checkpoint may skip; every "true" one it must not.
func TestMayChangeFiles(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		src  string
		want bool
	}{
		// Read-only.
		{"ls -la", false},
		{"cat a.txt | grep x | wc -l", false},
		{"git status && git log --oneline -3 && git diff HEAD~1", false},
		{"sed -n '1,5p' f.txt", false},
		{"sed 's/a/b/' f.txt", false},
		{"find . -name '*.go' -type f", false},
		{"sort -u names.txt", false},
		{"echo hi > /dev/null", false},
		{"cd sub && ls", false},
		{"env FOO=1 grep -r x .", false},
		{"timeout 5 cat x", false},
		{"rg pattern src/", false},
		{"tree -L 2", false},
		// May change files.
		{"sed -i 's/a/b/' f.txt", true},
		{"sed -ni 's/a/b/p' f.txt", true},
		{"sed --in-place=.bak 's/a/b/' f.txt", true},
		{"sed 's/a/b/w out.txt' f.txt", true},
		{"sed -e '1e touch x' f.txt", true},
		{"echo hi > out.txt", true},
		{"echo hi >> out.txt", true},
		{"cat a | tee b", true},
		{"rm -rf build", true},
		{"touch x", true},
		{"mv a b", true},
		{"cp a b", true},
		{"chmod +x run.sh", true},
		{"go build ./...", true},
		{"python3 script.py", true},
		{"make", true},
		{"npm install", true},
		{"git checkout -- .", true},
		{"git stash", true},
		{"git commit -m x", true},
		{"git diff --output=patch.txt", true},
		{"git -C sub reset --hard", true},
		{"sort -o out.txt in.txt", true},
		{"sort --output=out.txt in.txt", true},
		{"find . -name '*.tmp' -delete", true},
		{"find . -name '*.tmp' -exec rm {} +", true},
		{"find . -fprint out.txt", true},
		{"ls | xargs rm", true},
		{"env rm x", true},
		{"timeout 5 rm x", true},
		{"$CMD x", true},
		{"eval \"$X\"", true},
		{"bash -c 'rm x'", true},
		{"sh script.sh", true},
		{"ls; rm x", true},
		{"ls $(rm x)", true},
		{"unzip a.zip", true},
		{"tar xf a.tar", true},
		{"tree -o out.txt", true},
		{"file -C -m magic", true},
		{"rg --pre ./conv pattern", true},
		{"git grep -O x", true},
		{"git grep --open-files-in-pager=vi x", true},
		{"dd if=a of=b", true},
		{"patch -p1 < fix.diff", true},
		{"ln -s a b", true},
		{"mkdir d", true},
		{"", false},
	} {
		if got := Analyze(tc.src).MayChangeFiles(); got != tc.want {
			t.Errorf("MayChangeFiles(%q) = %v, want %v", tc.src, got, tc.want)
		}
	}
}
