/*
 * Runs inside Chromium, on the origin of the service under test (see ui5-consumers.test.ts). It reads
 * the OData interface with the consumer libraries of SAP UI5 and returns plain data that the test
 * compares with the JSON export. Plain browser JavaScript, added to the page as a script, so that no
 * compiler touches what the browser runs.
 */
(function () {
  'use strict';

  var M = 'http://schemas.microsoft.com/ado/2007/08/dataservices/metadata';

  /** A date as the test can compare it: its milliseconds and what kind of value it was. */
  function dateValue(value) {
    if (value instanceof Date) return { kind: 'Date', ms: value.getTime() };
    return { kind: typeof value, value: value };
  }

  /** An entity read by a consumer, reduced to the values the test compares. */
  function entityValues(entity) {
    return {
      uri: entity.__metadata && entity.__metadata.uri,
      id: entity.__metadata && entity.__metadata.id,
      type: entity.__metadata && entity.__metadata.type,
      uuid: entity.uuid,
      nonsense: entity.nonsense,
      original_nonsense: entity.original_nonsense,
      timestamp: entity.timestamp,
      created: dateValue(entity.created),
      multiline: entity.multiline,
    };
  }

  /** read wraps datajs' OData.read in a promise; a failure resolves too, with what datajs reported. */
  function read(request, handler, metadata) {
    return new Promise(function (resolve) {
      window.OData.read(
        request,
        function (data, response) {
          resolve({ ok: true, data: data, status: response.statusCode, headers: response.headers, body: response.body });
        },
        function (error) {
          var response = error.response || {};
          resolve({ ok: false, message: error.message, status: response.statusCode, headers: response.headers || {}, body: response.body });
        },
        handler,
        undefined,
        metadata,
      );
    });
  }

  function header(headers, name) {
    for (var key in headers) if (key.toLowerCase() === name) return headers[key];
    return undefined;
  }

  /** readAllPages follows `__next` from `url` until the last page; returns the entities and the pages. */
  async function readAllPages(url, metadata) {
    var entities = [];
    var pages = [];
    var next = url;
    while (next) {
      var page = await read({ requestUri: next, headers: { Accept: metadata ? 'application/json' : 'application/atom+xml' } }, undefined, metadata);
      if (!page.ok) throw new Error('reading ' + next + ' failed: ' + page.status + ' ' + page.message + ' ' + page.body);
      pages.push({ url: next, count: page.data.__count, size: page.data.results.length, next: page.data.__next || null, body: metadata ? page.body : null });
      for (var i = 0; i < page.data.results.length; i++) entities.push(entityValues(page.data.results[i]));
      next = page.data.__next;
      if (pages.length > 1000) throw new Error('more than 1000 pages: the next links loop');
    }
    return { entities: entities, pages: pages };
  }

  /** datajs reads every document of the service with Microsoft's datajs, as UI5 ships it. */
  async function datajs(root) {
    var out = {};

    var service = await read({ requestUri: root, headers: { Accept: 'application/atomsvc+xml' } });
    out.service = {
      status: service.status,
      collections: service.data.workspaces[0].collections.map(function (c) {
        return { title: c.title, href: c.href };
      }),
    };

    var metadata = await read(root + '$metadata', window.OData.metadataHandler);
    var schema = metadata.data.dataServices.schema[0];
    var type = schema.entityType[0];
    out.metadata = {
      status: metadata.status,
      contentType: header(metadata.headers, 'content-type'),
      dataServiceVersion: metadata.data.dataServices.dataServiceVersion,
      namespace: schema.namespace,
      entityType: type.name,
      key: type.key.propertyRef.map(function (p) {
        return p.name;
      }),
      properties: type.property.map(function (p) {
        return { name: p.name, type: p.type, nullable: p.nullable };
      }),
      container: schema.entityContainer[0].name,
      isDefault: schema.entityContainer[0].isDefaultEntityContainer,
      entitySets: schema.entityContainer[0].entitySet.map(function (s) {
        return { name: s.name, entityType: s.entityType };
      }),
    };

    // Atom, page by page, with a count; then verbose JSON with the metadata, which turns dates into Dates.
    out.atom = await readAllPages(root + 'nonsense_list?$inlinecount=allpages');
    out.json = await readAllPages(root + 'nonsense_list?$format=json&$inlinecount=allpages', metadata.data);
    // A filtered, ordered, projected walk, to see that next links keep every option.
    out.filtered = await readAllPages(root + "nonsense_list?$filter=substringof('sock',nonsense)&$orderby=length(nonsense) desc&$select=uuid,nonsense&$inlinecount=allpages&$top=150");

    var count = await read(root + 'nonsense_list/$count');
    out.count = { status: count.status, data: count.data };

    return out;
  }

  /** datajsOne reads one entity in Atom and in JSON, and an error. */
  async function datajsOne(root, uuid) {
    var metadata = await read(root + '$metadata', window.OData.metadataHandler);
    var path = root + "nonsense_list(guid'" + uuid + "')";
    var atom = await read({ requestUri: path, headers: { Accept: 'application/atom+xml' } });
    var json = await read({ requestUri: path + '?$format=json' }, undefined, metadata.data);
    var error = await read({ requestUri: root + "nonsense_list?$filter=substringof('x', bogus)", headers: { Accept: 'application/atom+xml' } });
    var doc = new DOMParser().parseFromString(error.body, 'application/xml');
    var root_ = doc.documentElement;
    var message = root_.getElementsByTagNameNS(M, 'message')[0];
    return {
      atom: atom.ok ? entityValues(atom.data) : atom,
      json: json.ok ? entityValues(json.data) : json,
      error: {
        ok: error.ok,
        status: error.status,
        message: error.message,
        contentType: header(error.headers, 'content-type'),
        rootName: root_.nodeName,
        rootNamespace: root_.namespaceURI,
        messageText: message ? message.textContent : null,
        messageLang: message ? message.getAttributeNS('http://www.w3.org/XML/1998/namespace', 'lang') : null,
      },
    };
  }

  /**
   * ui5 reads the feed through OpenUI5's sap.ui.model.odata.v2.ODataModel (which uses datajs), in JSON
   * (the model's default) or Atom, with a substringof filter, an order and an inline count, following
   * the next links by their $skiptoken; then asks for a bad $filter and collects what the model's
   * message handling shows.
   */
  function ui5(root, json, word) {
    return new Promise(function (resolve, reject) {
      window.sap.ui.require(
        ['sap/ui/core/Core', 'sap/ui/core/Messaging', 'sap/ui/model/odata/v2/ODataModel', 'sap/ui/model/Filter', 'sap/ui/model/FilterOperator', 'sap/ui/model/Sorter'],
        function (Core, Messaging, ODataModel, Filter, FilterOperator, Sorter) {
          Core.ready()
            .then(async function () {
              var model = new ODataModel(root, { json: json, useBatch: false, tokenHandling: false, defaultCountMode: 'Inline' });
              var failed = await new Promise(function (done) {
                model.attachMetadataFailed(function (event) {
                  done(event.getParameters());
                });
                model.metadataLoaded().then(function () {
                  done(null);
                });
              });
              if (failed) throw new Error('UI5 could not load $metadata: ' + JSON.stringify(failed));
              var meta = model.getServiceMetadata().dataServices.schema[0];

              function modelRead(parameters) {
                return new Promise(function (done) {
                  model.read('/nonsense_list', {
                    filters: parameters.filters,
                    sorters: parameters.sorters,
                    urlParameters: parameters.urlParameters,
                    success: function (data) {
                      done({ ok: true, data: data });
                    },
                    error: function (error) {
                      done({ ok: false, error: { message: error.message, statusCode: error.statusCode, responseText: error.responseText } });
                    },
                  });
                });
              }

              var filters = [new Filter('nonsense', FilterOperator.Contains, word)];
              var sorters = [new Sorter('timestamp', true)];
              var entities = [];
              var counts = [];
              var pages = 0;
              var skiptoken = null;
              do {
                var urlParameters = { $inlinecount: 'allpages' };
                if (skiptoken) urlParameters.$skiptoken = skiptoken;
                var page = await modelRead({ filters: filters, sorters: sorters, urlParameters: urlParameters });
                if (!page.ok) throw new Error('UI5 read failed: ' + JSON.stringify(page.error));
                pages++;
                counts.push(page.data.__count);
                for (var i = 0; i < page.data.results.length; i++) entities.push(entityValues(page.data.results[i]));
                var next = page.data.__next ? new URL(page.data.__next, location.href) : null;
                skiptoken = next ? next.searchParams.get('$skiptoken') : null;
                if (next && !skiptoken) throw new Error('a next link without $skiptoken: ' + page.data.__next);
              } while (skiptoken && pages < 100);

              // What the model keeps for a bound path, as a UI control would read it.
              var first = entities.length > 0 ? model.getProperty("/nonsense_list(guid'" + entities[0].uuid + "')/nonsense") : null;

              Messaging.removeAllMessages();
              var bad = await modelRead({ urlParameters: { $filter: 'bogus eq 1' } });
              // The model reports messages asynchronously after the error callback.
              await new Promise(function (done) {
                setTimeout(done, 50);
              });
              var messages = Messaging.getMessageModel()
                .getData()
                .map(function (m) {
                  return { type: m.getType(), message: m.getMessage(), technical: m.getTechnical() };
                });
              model.destroy();
              return {
                version: window.sap.ui.version,
                metadata: { entityType: meta.entityType[0].name, entitySet: meta.entityContainer[0].entitySet[0].name },
                pages: pages,
                counts: counts,
                entities: entities,
                boundNonsense: first,
                error: bad.ok ? null : bad.error,
                messages: messages,
              };
            })
            .then(resolve, function (error) {
              reject(new Error(String((error && error.stack) || error)));
            });
        },
        function (error) {
          reject(new Error('UI5 modules did not load: ' + error));
        },
      );
    });
  }

  window.consumerReaders = { datajs: datajs, datajsOne: datajsOne, ui5: ui5 };
})();
