package index

import "strings"

// fieldText is the text of entry e that goes into field f.
func fieldText(e Entry, f string) string {
	switch f {
	case fieldName:
		return toolPart(e)
	case fieldTitle:
		return e.Title
	case fieldLead:
		return leadSentence(e.Description)
	case fieldDesc:
		return clip(e.Description, maxDescBytes)
	case fieldServer:
		words := []string{e.Server, e.ServerTitle}
		for _, k := range e.Keywords {
			if k != e.Server {
				words = append(words, k)
			}
		}
		return strings.Join(words, " ")
	case fieldParam:
		var sb strings.Builder
		for _, p := range e.Params {
			sb.WriteString(clip(p.Description, maxParamDescBytes))
			sb.WriteByte(' ')
		}
		return sb.String()
	case fieldPName:
		var sb strings.Builder
		for _, p := range e.Params {
			sb.WriteString(p.Name)
			sb.WriteByte(' ')
		}
		return sb.String()
	case fieldHead:
		return strings.Join(e.Headings, " ")
	}
	return ""
}

// Description text past these sizes is examples, JSON and caveats; it costs
// Build time without telling what the tool does.
const (
	maxDescBytes      = 1500
	maxParamDescBytes = 200
)

// clip cuts s to at most n bytes, at a space when there is one.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if i := strings.LastIndexByte(s[:n], ' '); i > n/2 {
		return s[:i]
	}
	return s[:n]
}

// toolPart is the exposed name without its server prefix: the server has a
// field of its own, and repeating it in every name would only dilute the
// name field.
func toolPart(e Entry) string {
	if e.Server != "" {
		if rest, ok := strings.CutPrefix(e.Name, e.Server+"__"); ok {
			return rest
		}
	}
	return e.Name
}

// leadSentence is the description up to its first sentence end or line
// break, at most 200 bytes: most descriptions say what the tool does first
// and how to call it after.
func leadSentence(d string) string {
	d = strings.TrimSpace(d)
	end := len(d)
	if i := strings.IndexByte(d, '\n'); i >= 0 && i < end {
		end = i
	}
	for i := 0; i+1 < end; i++ {
		if (d[i] == '.' || d[i] == '!' || d[i] == '?') && d[i+1] == ' ' {
			end = i
			break
		}
	}
	if end > 200 {
		end = 200
	}
	return d[:end]
}
