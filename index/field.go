package index

import (
	"github.com/blugelabs/bluge/analysis"
	segment "github.com/blugelabs/bluge_segment_api"
)

// termsField is a bluge field whose terms and frequencies are given, not
// analyzed: Build has analyzed every field already (its statistics feed
// typo correction, the domain prior and weak detection), and the combined
// BM25F field would otherwise be a text with every name term spelled four
// times for bluge to split and count again.
type termsField struct {
	name   string
	terms  []fieldTerm
	length int // weighted number of terms: BM25's field length
}

type fieldTerm struct {
	term []byte
	freq int
}

func (t fieldTerm) Term() []byte                       { return t.term }
func (t fieldTerm) Frequency() int                     { return t.freq }
func (t fieldTerm) EachLocation(segment.VisitLocation) {}
func (f *termsField) Name() string                     { return f.name }
func (f *termsField) Length() int                      { return f.length }
func (f *termsField) Value() []byte                    { return nil }
func (f *termsField) Index() bool                      { return true }
func (f *termsField) Store() bool                      { return false }
func (f *termsField) IndexDocValues() bool             { return false }
func (f *termsField) Analyze(startOffset int) int      { return startOffset }
func (f *termsField) PositionIncrementGap() int        { return 0 }
func (f *termsField) Size() int                        { return len(f.name) + 32*len(f.terms) }
func (f *termsField) EachTerm(vt segment.VisitTerm) {
	for _, t := range f.terms {
		vt(t)
	}
}

// AnalyzedTokenFrequencies serves composite fields, which quiver does not
// use.
func (f *termsField) AnalyzedTokenFrequencies() analysis.TokenFrequencies { return nil }

// termsBuilder collects one field's weighted term frequencies.
type termsBuilder struct {
	index  map[string]int
	terms  []fieldTerm
	length int
}

func (b *termsBuilder) reset() {
	clear(b.index)
	b.terms = nil
	b.length = 0
}

func (b *termsBuilder) add(term string, weight int) {
	if weight <= 0 {
		return
	}
	if b.index == nil {
		b.index = map[string]int{}
	}
	b.length += weight
	if k, ok := b.index[term]; ok {
		b.terms[k].freq += weight
		return
	}
	b.index[term] = len(b.terms)
	b.terms = append(b.terms, fieldTerm{term: []byte(term), freq: weight})
}

// addAcc adds a term of entry i counted by a chunk's termAcc: the
// accumulator remembers where the entry's term is, which spares the map,
// and lends its bytes, which bluge only reads.
func (b *termsBuilder) addAcc(t *termAcc, i, weight int) {
	if weight <= 0 {
		return
	}
	b.length += weight
	if t.doc == i+1 {
		b.terms[t.slot].freq += weight
		return
	}
	if t.bytes == nil {
		t.bytes = []byte(t.term)
	}
	t.doc, t.slot = i+1, len(b.terms)
	b.terms = append(b.terms, fieldTerm{term: t.bytes, freq: weight})
}

func (b *termsBuilder) field(name string) *termsField {
	return &termsField{name: name, terms: b.terms, length: b.length}
}
