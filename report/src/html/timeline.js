// The run page's timeline: zoom (wheel, drag, buttons) and hover.
// Every element placed in time carries data-t0 / data-t1 (µs); zooming
// places them again and redraws the axis by the server's rule.
(function () {
  'use strict';
  var svg = document.getElementById('timeline');
  if (!svg) { return; }
  var NS = 'http://www.w3.org/2000/svg';
  var END = Number(svg.getAttribute('data-end'));
  var X0 = Number(svg.getAttribute('data-x0'));
  var W = Number(svg.getAttribute('data-w'));
  var WIDTH = svg.viewBox.baseVal.width;
  var HEIGHT = svg.viewBox.baseVal.height;
  var MIN_W = 1.5;
  var timed = Array.prototype.slice.call(svg.querySelectorAll('[data-t0]'));
  var view = { from: 0, to: END };

  function x(t) { return X0 + (t - view.from) * W / (view.to - view.from); }

  // The smallest of 1, 2 or 5 × 10^k µs that is at least raw.
  function niceStep(raw) {
    var base = 1;
    for (;;) {
      var ms = [1, 2, 5];
      for (var k = 0; k < ms.length; k++) {
        if (base * ms[k] >= raw) { return base * ms[k]; }
      }
      base *= 10;
    }
  }

  function drawAxis() {
    var axis = document.getElementById('axis');
    while (axis.firstChild) { axis.removeChild(axis.firstChild); }
    var step = niceStep((view.to - view.from) / 8);
    for (var t = Math.ceil(view.from / step) * step; t <= view.to; t += step) {
      var line = document.createElementNS(NS, 'line');
      line.setAttribute('class', 'tick');
      line.setAttribute('x1', x(t)); line.setAttribute('x2', x(t));
      line.setAttribute('y1', 22); line.setAttribute('y2', HEIGHT);
      axis.appendChild(line);
      var label = document.createElementNS(NS, 'text');
      label.setAttribute('x', x(t)); label.setAttribute('y', 16);
      label.setAttribute('text-anchor', 'middle');
      label.textContent = String(t / 1000);
      axis.appendChild(label);
    }
  }

  function place() {
    for (var k = 0; k < timed.length; k++) {
      var el = timed[k];
      var t0 = Number(el.getAttribute('data-t0'));
      var t1 = el.hasAttribute('data-t1') ? Number(el.getAttribute('data-t1')) : t0;
      var x0 = x(t0);
      switch (el.tagName) {
        case 'rect':
          el.setAttribute('x', x0);
          el.setAttribute('width', Math.max(MIN_W, x(t1) - x0));
          break;
        case 'line':
          el.setAttribute('x1', x0);
          el.setAttribute('x2', t1 > t0 ? Math.max(x0 + MIN_W, x(t1)) : x0);
          break;
        case 'circle':
          el.setAttribute('cx', x0);
          break;
        case 'text':
          el.setAttribute('x', x0 + Number(el.getAttribute('data-dx') || 0));
          break;
      }
    }
    drawAxis();
    var shown = document.getElementById('view');
    if (shown) {
      shown.textContent = 'showing ' + (view.from / 1000) + ' to ' + (view.to / 1000) + ' ms of ' + (END / 1000) + ' ms';
    }
  }

  // Shows [from, to] µs, kept within the run and at least 10 µs wide.
  function show(from, to) {
    var span = Math.min(END, Math.max(10, to - from));
    from = Math.max(0, Math.min(from, END - span));
    view.from = from; view.to = from + span;
    place();
  }

  // The time under a client x coordinate.
  function timeAt(clientX) {
    var box = svg.getBoundingClientRect();
    var ux = (clientX - box.left) * WIDTH / box.width;
    return view.from + (ux - X0) * (view.to - view.from) / W;
  }

  function zoom(factor, around) {
    var at = around === undefined ? (view.from + view.to) / 2 : around;
    show(at - (at - view.from) / factor, at + (view.to - at) / factor);
  }

  svg.addEventListener('wheel', function (e) {
    e.preventDefault();
    zoom(e.deltaY < 0 ? 1.5 : 1 / 1.5, timeAt(e.clientX));
  }, { passive: false });

  var drag = null;
  svg.addEventListener('mousedown', function (e) {
    drag = { x: e.clientX, from: view.from, to: view.to };
  });
  window.addEventListener('mouseup', function () { drag = null; });
  window.addEventListener('mousemove', function (e) {
    if (!drag) { return; }
    var box = svg.getBoundingClientRect();
    var dt = (e.clientX - drag.x) * WIDTH / box.width * (drag.to - drag.from) / W;
    show(drag.from - dt, drag.to - dt);
  });

  function button(id, action) {
    var b = document.getElementById(id);
    if (b) { b.addEventListener('click', action); }
  }
  button('zoom-in', function () { zoom(2); });
  button('zoom-out', function () { zoom(0.5); });
  button('zoom-reset', function () { show(0, END); });
  var targets = document.querySelectorAll('[data-zoom-from]');
  for (var k = 0; k < targets.length; k++) {
    targets[k].addEventListener('click', function () {
      var from = Number(this.getAttribute('data-zoom-from'));
      var to = Number(this.getAttribute('data-zoom-to'));
      var pad = Math.max(500, (to - from) / 4);
      show(from - pad, to + pad);
      svg.scrollIntoView({ block: 'center' });
    });
  }

  // Hover: the element's sentence, then each of its events in full.
  var tip = document.getElementById('tip');
  function eventText(i) {
    var row = document.getElementById('ev-' + i);
    var cell = row && row.querySelector('.json');
    return cell ? cell.textContent : 'event ' + i;
  }
  svg.addEventListener('mouseover', function (e) {
    var el = e.target.closest ? e.target.closest('[data-tip]') : null;
    if (!el || !tip) { return; }
    var lines = [el.getAttribute('data-tip')];
    var evs = (el.getAttribute('data-ev') || '').split(' ');
    for (var k = 0; k < evs.length; k++) {
      if (evs[k] !== '') { lines.push(eventText(evs[k])); }
    }
    tip.textContent = lines.join('\n');
    tip.style.display = 'block';
  });
  svg.addEventListener('mousemove', function (e) {
    if (!tip || tip.style.display !== 'block') { return; }
    var left = Math.min(e.clientX + 14, window.innerWidth - tip.offsetWidth - 8);
    tip.style.left = Math.max(4, left) + 'px';
    tip.style.top = (e.clientY + 16) + 'px';
  });
  svg.addEventListener('mouseout', function (e) {
    if (tip && !(e.relatedTarget && e.relatedTarget.closest && e.relatedTarget.closest('[data-tip]'))) {
      tip.style.display = 'none';
    }
  });

  // A link into the folded history opens it.
  function openTarget() {
    var id = decodeURIComponent(location.hash.slice(1));
    var el = id && document.getElementById(id);
    for (var p = el; p; p = p.parentElement) {
      if (p.tagName === 'DETAILS') { p.open = true; }
    }
    if (el) { el.scrollIntoView({ block: 'center' }); }
  }
  window.addEventListener('hashchange', openTarget);
  if (location.hash && location.hash !== '#selftest') { openTarget(); }

  // `#selftest`: zoom in on the first witness (or the middle), check that
  // a span grew and the axis changed, hover an element and check the tip
  // shows its events; the result goes on the root element for a headless
  // browser to read.
  if (location.hash === '#selftest') {
    var result = 'pass';
    try {
      var hold = svg.querySelector('rect.hold') || svg.querySelector('rect[data-t0]');
      var before = Number(hold.getAttribute('width'));
      var ticksBefore = document.getElementById('axis').textContent;
      var mark = svg.querySelector('circle.witness');
      var center = mark ? Number(mark.getAttribute('data-t0')) : END / 2;
      zoom(4, center);
      var after = Number(hold.getAttribute('width'));
      if (!(after > before || after === MIN_W)) { result = 'fail: zoom did not widen a span (' + before + ' -> ' + after + ')'; }
      if (document.getElementById('axis').textContent === ticksBefore) { result = 'fail: zoom did not redraw the axis'; }
      var target = svg.querySelector('[data-ev]:not([data-ev=""])');
      target.dispatchEvent(new MouseEvent('mouseover', { bubbles: true, clientX: 10, clientY: 10 }));
      var first = target.getAttribute('data-ev').split(' ')[0];
      if (tip.style.display !== 'block' || tip.textContent.indexOf('{"i":' + first + ',') < 0) {
        result = 'fail: hovering did not show event ' + first + ' in full';
      }
      show(0, END);
    } catch (err) {
      result = 'fail: ' + err;
    }
    document.documentElement.setAttribute('data-selftest', result);
  }
  place();
})();
