package main

// The HTTP API: each request matched to the template's routes as API
// Gateway matches them, turned into the payload format 2.0 event, invoked
// on the route's function and its response written back.

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// Gateway serves the template's HTTP API.
type Gateway struct {
	Routes []Route
	Fns    *Functions
	Log    *slog.Logger
	seq    func() string
}

// maxBody is API Gateway's payload limit.
const maxBody = 10 << 20

// match finds the route of a request: an exact method beats ANY, a literal
// segment beats a path variable (leftmost first), and $default takes the
// rest.
func (g *Gateway) match(method, path string) (Route, map[string]string, bool) {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	var best Route
	var bestParams map[string]string
	bestScore := ""
	found := false
	for _, r := range g.Routes {
		if r.Key == "$default" || (r.Method != method && r.Method != "ANY") {
			continue
		}
		rs := strings.Split(strings.TrimPrefix(r.Path, "/"), "/")
		if len(rs) != len(segs) {
			continue
		}
		params := map[string]string{}
		score := make([]byte, 0, len(rs)+1)
		ok := true
		for i, s := range rs {
			if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
				if segs[i] == "" {
					ok = false
					break
				}
				params[s[1:len(s)-1]] = segs[i]
				score = append(score, '0')
			} else if s == segs[i] {
				score = append(score, '1')
			} else {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		if r.Method == method {
			score = append(score, '1')
		} else {
			score = append(score, '0')
		}
		if !found || string(score) > bestScore {
			best, bestParams, bestScore, found = r, params, string(score), true
		}
	}
	if found {
		return best, bestParams, true
	}
	for _, r := range g.Routes {
		if r.Key == "$default" {
			return r, nil, true
		}
	}
	return Route{}, nil, false
}

func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	reqID := g.seq()
	w.Header().Set("Apigw-Requestid", reqID)
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		gatewayError(w, http.StatusBadRequest, "Bad Request")
		return
	}
	if len(body) > maxBody {
		gatewayError(w, http.StatusRequestEntityTooLarge, "Request Entity Too Large")
		return
	}
	route, params, ok := g.match(r.Method, r.URL.Path)
	if !ok {
		gatewayError(w, http.StatusNotFound, "Not Found")
		return
	}
	ev := event(r, body, route, params, reqID, start)
	payload, err := json.Marshal(ev)
	if err != nil {
		gatewayError(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	out, err := g.Fns.Invoke(r.Context(), route.Function, payload)
	if err != nil {
		g.Log.Error("integration failed", "route", route.Key, "error", err)
		gatewayError(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	var res events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &res); err != nil || res.StatusCode == 0 {
		g.Log.Error("the function's response is not a payload 2.0 response", "route", route.Key, "response", string(out))
		gatewayError(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	h := w.Header()
	for k, vs := range res.MultiValueHeaders {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	for k, v := range res.Headers {
		h.Set(k, v)
	}
	for _, c := range res.Cookies {
		h.Add("Set-Cookie", c)
	}
	b := []byte(res.Body)
	if res.IsBase64Encoded {
		if b, err = base64.StdEncoding.DecodeString(res.Body); err != nil {
			gatewayError(w, http.StatusInternalServerError, "Internal Server Error")
			return
		}
	}
	h.Set("Content-Length", fmt.Sprint(len(b)))
	w.WriteHeader(res.StatusCode)
	w.Write(b)
}

// gatewayError is API Gateway's own answer, not the service's.
func gatewayError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, "{\"message\":%q}", msg)
}

func event(r *http.Request, body []byte, route Route, params map[string]string, reqID string, at time.Time) events.APIGatewayV2HTTPRequest {
	headers := map[string]string{}
	for k, vs := range r.Header {
		headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	host := r.Host
	headers["host"] = host
	var cookies []string
	if c, ok := headers["cookie"]; ok {
		cookies = strings.Split(c, "; ")
		delete(headers, "cookie")
	}
	ip, _, _ := net.SplitHostPort(r.RemoteAddr)
	headers["x-forwarded-for"] = ip
	headers["x-forwarded-proto"] = "http"
	var query map[string]string
	if q := r.URL.Query(); len(q) > 0 {
		query = map[string]string{}
		for k, vs := range q {
			query[k] = strings.Join(vs, ",")
		}
	}
	ev := events.APIGatewayV2HTTPRequest{
		Version:               "2.0",
		RouteKey:              route.Key,
		RawPath:               r.URL.EscapedPath(),
		RawQueryString:        r.URL.RawQuery,
		Cookies:               cookies,
		Headers:               headers,
		QueryStringParameters: query,
		PathParameters:        params,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:     route.Key,
			AccountID:    localAccount,
			Stage:        "$default",
			RequestID:    reqID,
			APIID:        localAPIID,
			DomainName:   host,
			DomainPrefix: strings.SplitN(host, ".", 2)[0],
			Time:         at.UTC().Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch:    at.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method:    r.Method,
				Path:      r.URL.Path,
				Protocol:  r.Proto,
				SourceIP:  ip,
				UserAgent: r.UserAgent(),
			},
		},
	}
	if len(body) > 0 {
		if textual(r.Header.Get("Content-Type")) && utf8.Valid(body) {
			ev.Body = string(body)
		} else {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}
	}
	return ev
}

// textual reports whether API Gateway passes a body of this type as text
// (anything else is base64-encoded in the event).
func textual(ct string) bool {
	mt, _, _ := mime.ParseMediaType(ct)
	return strings.HasPrefix(mt, "text/") || mt == "application/json" || strings.HasSuffix(mt, "+json") || mt == "application/xml" || mt == "application/x-www-form-urlencoded"
}
